// example_app: the native test application of boincpy.
//
// Reads its input file (logical name "in"), writes it upper-cased to its output
// file (logical name "out"), reports progress, and calls boinc_finish(0).
// Options (from the workunit's command line):
//   --cpu_time N   spin for about N seconds of CPU after copying, so a job takes
//                  long enough to be seen running;
//   --wrong        write a deliberately different output (lower-cased), so a
//                  validator can be shown to mark it invalid;
//   --read NAME    also read the input file of logical name NAME to the end
//                  (e.g. a large sticky data file) and say how many bytes;
//   --trickle N    send two trickle-up messages -- variety "runtime" with
//                  <runtime>SECONDS</runtime> (for trickle_credit) and variety
//                  "echo" (for trickle_echo) -- then wait up to N seconds for a
//                  trickle-down and copy it to stderr and the output.
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "boinc/boinc_api.h"
#include "boinc/filesys.h"
#include "boinc/util.h"

static double cpu_seconds() {
    double t = 0;
    boinc_wu_cpu_time(t);
    return t;
}

// Read logical file NAME to the end; the number of bytes, or -1.
static long read_all(const char* name) {
    std::string path;
    boinc_resolve_filename_s(name, path);
    FILE* f = boinc_fopen(path.c_str(), "rb");
    if (!f) return -1;
    static char buf[1 << 16];
    long n = 0;
    size_t k;
    while ((k = fread(buf, 1, sizeof(buf), f)) > 0) n += (long)k;
    fclose(f);
    return n;
}

// Send the trickle-ups, then wait up to `wait` seconds for a trickle-down;
// its text ("" if none came).
static std::string trickle(double wait) {
    char runtime_variety[] = "runtime";
    char echo_variety[] = "echo";
    char text[256];
    double t = boinc_elapsed_time();
    snprintf(text, sizeof(text), "<runtime>%f</runtime>\n", t > 1 ? t : 1.0);
    int retval = boinc_send_trickle_up(runtime_variety, text);
    fprintf(stderr, "example_app: trickle-up runtime sent (%d)\n", retval);
    // The API keeps one trickle-up file in the slot until the client takes
    // it (about a second): the next one must wait, or it replaces this one.
    for (int i = 0; i < 100 && boinc_file_exists("trickle_up.xml"); i++) boinc_sleep(0.2);
    snprintf(text, sizeof(text), "<echo_text>hello from example_app</echo_text>\n");
    retval = boinc_send_trickle_up(echo_variety, text);
    fprintf(stderr, "example_app: trickle-up echo sent (%d)\n", retval);
    char name[256];
    for (double waited = 0; waited < wait; waited += 0.5) {
        if (boinc_receive_trickle_down(name, sizeof(name))) {
            std::string body;
            FILE* f = boinc_fopen(name, "r");
            if (f) {
                int c;
                while ((c = fgetc(f)) != EOF) body += (char)c;
                fclose(f);
            }
            boinc_delete_file(name);
            fprintf(stderr, "example_app: trickle-down %s: %s\n", name, body.c_str());
            return body;
        }
        boinc_sleep(0.5);
    }
    fprintf(stderr, "example_app: no trickle-down in %.0f seconds\n", wait);
    return "";
}

int main(int argc, char** argv) {
    double spin = 0, trickle_wait = 0;
    bool wrong = false;
    const char* read_name = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--cpu_time") && i + 1 < argc) spin = atof(argv[++i]);
        else if (!strcmp(argv[i], "--wrong")) wrong = true;
        else if (!strcmp(argv[i], "--read") && i + 1 < argc) read_name = argv[++i];
        else if (!strcmp(argv[i], "--trickle") && i + 1 < argc) trickle_wait = atof(argv[++i]);
    }
    int retval = boinc_init();
    if (retval) {
        fprintf(stderr, "boinc_init returned %d\n", retval);
        exit(retval);
    }
    std::string in_path, out_path;
    boinc_resolve_filename_s("in", in_path);
    boinc_resolve_filename_s("out", out_path);

    FILE* in = boinc_fopen(in_path.c_str(), "r");
    if (!in) {
        fprintf(stderr, "can't open input %s\n", in_path.c_str());
        boinc_finish(1);
    }
    FILE* out = boinc_fopen(out_path.c_str(), "w");
    if (!out) {
        fprintf(stderr, "can't open output %s\n", out_path.c_str());
        boinc_finish(1);
    }
    int c;
    long n = 0;
    while ((c = fgetc(in)) != EOF) {
        fputc(wrong ? tolower(c) : toupper(c), out);
        n++;
    }
    fclose(in);
    if (read_name) {
        long nread = read_all(read_name);
        fprintf(stderr, "example_app: read %ld bytes of %s\n", nread, read_name);
    }
    if (trickle_wait > 0) {
        std::string down = trickle(trickle_wait);
        fputs(down.c_str(), out);
    }

    double start = cpu_seconds();
    volatile double x = 0;
    while (spin > 0) {
        for (int i = 0; i < 10000000; i++) x += i * 0.5;
        double done = cpu_seconds() - start;
        boinc_fraction_done(done < spin ? done / spin : 1.0);
        if (done >= spin) break;
    }
    fclose(out);
    // The API samples the process's CPU time 10 times a second (SIGALRM) and
    // the client keeps the last value it was sent: a job done before the first
    // sample would be reported with 0 s of CPU.  Wait for one (at most 3 s).
    for (int i = 0; i < 30 && cpu_seconds() <= 0; i++) boinc_sleep(0.1);
    fprintf(stderr, "example_app: copied %ld bytes%s\n", n, wrong ? " (wrong mode)" : "");
    boinc_fraction_done(1.0);
    boinc_finish(0);
}
