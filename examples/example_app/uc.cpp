// example_app: the native test application of boincpy.
//
// Reads its input file (logical name "in"), writes it upper-cased to its output
// file (logical name "out"), reports progress, and calls boinc_finish(0).
// Options (from the workunit's command line):
//   --cpu_time N   spin for about N seconds of CPU after copying, so a job takes
//                  long enough to be seen running;
//   --wrong        write a deliberately different output (lower-cased), so a
//                  validator can be shown to mark it invalid.
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

int main(int argc, char** argv) {
    double spin = 0;
    bool wrong = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--cpu_time") && i + 1 < argc) spin = atof(argv[++i]);
        else if (!strcmp(argv[i], "--wrong")) wrong = true;
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
