// wrapper: run one unmodified program as a BOINC job.
//
// boincpy's small stand-in for BOINC's wrapper (samples/wrapper in BOINC's
// source), for Debian, which doesn't package it.  Same app version layout,
// same job.xml, so a project can swap one for the other without touching
// anything on the server.  The app version holds
//   - this wrapper, the main program;
//   - a job description with the logical name job.xml;
//   - the program it runs (and any files that program needs).
//
// job.xml (what this wrapper reads; one <task>):
//   <job_desc>
//     <task>
//       <application>LOGICAL NAME</application>     the program to run
//       <command_line>ARGS</command_line>           its arguments; $PROJECT_DIR,
//                                                   $NTHREADS, $PWD,
//                                                   $GPU_DEVICE_NUM are replaced,
//                                                   boinc_resolve(NAME) becomes
//                                                   NAME's path
//       <stdin_filename>NAME</stdin_filename>       standard input from NAME
//       <stdout_filename>NAME</stdout_filename>     standard output to NAME
//                                                   (default: stderr.txt, which
//                                                   the server keeps)
//       <stderr_filename>NAME</stderr_filename>     standard error to NAME
//       <append_cmdline_args/>                      add the job's own arguments
//       <fraction_done_filename>NAME</..>           the program writes its
//                                                   progress (0..1) there
//       <checkpoint_filename>NAME</..>              the program checkpoints there
//       <setenv>VAR=VALUE</setenv>                  ... added to its environment
//       <exec_dir>DIR</exec_dir>                    run it in DIR
//     </task>
//   </job_desc>
// NAMEs are logical names, resolved as BOINC apps resolve them.  Several
// tasks, daemons, <unzip_input> and <zip_output> are refused: BOINC's wrapper
// does those.
//
// While the program runs, the wrapper relays the client's requests to it:
// suspend and resume as SIGSTOP and SIGCONT (SIGTSTP with --use_tstp) to the
// program's process group, so the commands a script runs stop with it; quit
// and abort (and a client that stopped answering) as SIGTERM, then SIGKILL
// after 10 s.  It reports CPU time and progress, and ends with
// boinc_finish(the program's exit status), EXIT_CHILD_FAILED if a signal
// killed it.  The program runs at the low CPU
// priority the client gives plain apps (it runs a wrapper higher, for
// <is_wrapper/>), unless the volunteer's cc_config.xml says otherwise.  The
// program must be a file of the app version (a link the client made to a
// signed file), as BOINC's wrapper means to require (make
// CHECK_EXECUTABLES=no builds one that runs any program, as BOINC's
// CHECK_EXECUTABLES switch).
//
// Options (on the app version's or the job's command line):
//   --nthreads N        value of $NTHREADS (BOINC's mt plan class passes it)
//   --device N          value of $GPU_DEVICE_NUM (the client's GPU, if any, wins)
//   --use_tstp          suspend with SIGTSTP (a program that is itself a wrapper)
//   --passthrough_child the arguments after it are the program's
//                       (with <append_cmdline_args/>)
//   --version           print the version and exit
// Other arguments are the program's, given to it with <append_cmdline_args/>.

#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "boinc/app_ipc.h"
#include "boinc/boinc_api.h"
#include "boinc/common_defs.h"
#include "boinc/error_numbers.h"
#include "boinc/filesys.h"
#include "boinc/parse.h"
#include "boinc/proc_control.h"
#include "boinc/procinfo.h"
#include "boinc/util.h"

static const char* WRAPPER_VERSION = "boincpy-wrapper 1.0";
static const double POLL_SECONDS = 0.1;     // how often requests are looked at
static const int REPORT_EVERY = 10;         // polls between status reports
static const int GRACE_SECONDS = 10;        // SIGTERM -> SIGKILL

struct Task {
    std::string application;
    std::string command_line;
    std::string stdin_name, stdout_name, stderr_name;
    std::string fraction_done_name, checkpoint_name;
    std::string exec_dir;
    std::vector<std::string> env;
    bool append_args = false;
};

static void say(const char* fmt, ...) {
    char prefix[256];
    fprintf(stderr, "%s wrapper: ", boinc_msg_prefix(prefix, sizeof(prefix)));
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
}

// Report an error the job can't get past, and end it with that status.
static void give_up(int status, const char* fmt, ...) {
    char prefix[256];
    fprintf(stderr, "%s wrapper: error: ", boinc_msg_prefix(prefix, sizeof(prefix)));
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    boinc_finish(status);
}

// ---------------------------------------------------------------------------
// job.xml

static int parse_task(XML_PARSER& xp, Task& t, std::string& error) {
    while (!xp.get_tag()) {
        if (!xp.is_tag) continue;
        if (xp.match_tag("/task")) return 0;
        std::string s;
        bool flag;
        double number;
        if (xp.parse_string("application", t.application)) continue;
        if (xp.parse_string("command_line", t.command_line)) continue;
        if (xp.parse_string("stdin_filename", t.stdin_name)) continue;
        if (xp.parse_string("stdout_filename", t.stdout_name)) continue;
        if (xp.parse_string("stderr_filename", t.stderr_name)) continue;
        if (xp.parse_string("fraction_done_filename", t.fraction_done_name)) continue;
        if (xp.parse_string("checkpoint_filename", t.checkpoint_name)) continue;
        if (xp.parse_string("exec_dir", t.exec_dir)) continue;
        if (xp.parse_string("setenv", s)) {
            if (s.find('=') == std::string::npos) {
                error = "<setenv>" + s + "</setenv> is not VAR=VALUE";
                return ERR_XML_PARSE;
            }
            t.env.push_back(s);
            continue;
        }
        if (xp.parse_bool("append_cmdline_args", t.append_args)) continue;
        if (xp.parse_bool("daemon", flag)) {
            if (flag) {
                error = "<daemon/> tasks need BOINC's wrapper";
                return ERR_XML_PARSE;
            }
            continue;
        }
        // one task, one process group: these change nothing here
        if (xp.parse_bool("multi_process", flag)) continue;
        if (xp.parse_double("weight", number)) continue;
        say("job.xml: <%s> in <task> is not used by this wrapper; ignored", xp.parsed_tag);
        xp.skip_unexpected(false, "");
    }
    error = "<task> is not closed";
    return ERR_XML_PARSE;
}

static int parse_job_file(Task& task, std::string& error) {
    std::string path;
    boinc_resolve_filename_s("job.xml", path);
    FILE* f = boinc_fopen(path.c_str(), "r");
    if (!f) {
        error = "can't open job.xml (" + path + "): is it in the app version, with "
                "<logical_name>job.xml</logical_name>?";
        return ERR_FOPEN;
    }
    MIOFILE mf;
    mf.init_file(f);
    XML_PARSER xp(&mf);
    int ntasks = 0;
    int retval = ERR_XML_PARSE;
    if (!xp.parse_start("job_desc")) {
        error = "job.xml: no <job_desc>";
        fclose(f);
        return retval;
    }
    while (!xp.get_tag()) {
        if (!xp.is_tag) continue;
        if (xp.match_tag("/job_desc")) {
            retval = 0;
            break;
        }
        if (xp.match_tag("task")) {
            if (++ntasks > 1) {
                error = "job.xml has more than one <task>; this wrapper runs one "
                        "(use BOINC's wrapper for several)";
                break;
            }
            retval = parse_task(xp, task, error);
            if (retval) break;
            retval = ERR_XML_PARSE;
            continue;
        }
        if (xp.match_tag("unzip_input") || xp.match_tag("zip_output")) {
            error = std::string("job.xml: <") + xp.parsed_tag + "> needs BOINC's wrapper";
            break;
        }
        say("job.xml: <%s> is not used by this wrapper; ignored", xp.parsed_tag);
        xp.skip_unexpected(false, "");
    }
    fclose(f);
    if (!retval && ntasks == 0) {
        error = "job.xml has no <task>";
        retval = ERR_XML_PARSE;
    }
    if (!retval && task.application.empty()) {
        error = "job.xml: the <task> has no <application>";
        retval = ERR_XML_PARSE;
    }
    if (retval && error.empty()) error = "job.xml: <job_desc> is not closed";
    return retval;
}

// ---------------------------------------------------------------------------
// the command line

static void replace_all(std::string& s, const std::string& from, const std::string& to) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
        s.replace(at, from.size(), to);
    }
}

static void substitute_macros(std::string& s, const APP_INIT_DATA& aid, int nthreads,
                              int device) {
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof(cwd))) strcpy(cwd, ".");
    replace_all(s, "$PROJECT_DIR", strlen(aid.project_dir) ? aid.project_dir : ".");
    replace_all(s, "$NTHREADS", std::to_string(nthreads));
    replace_all(s, "$PWD", cwd);
    if (aid.gpu_device_num >= 0) device = aid.gpu_device_num;
    if (device >= 0) replace_all(s, "$GPU_DEVICE_NUM", std::to_string(device));
}

// boinc_resolve(NAME) -> the path NAME stands for in the slot directory
static int resolve_phrases(std::string& s, std::string& error) {
    const std::string open = "boinc_resolve(";
    for (size_t at = s.find(open); at != std::string::npos; at = s.find(open, at)) {
        size_t close = s.find(')', at);
        if (close == std::string::npos) {
            error = "command line: boinc_resolve( without )";
            return ERR_XML_PARSE;
        }
        std::string name = s.substr(at + open.size(), close - at - open.size());
        std::string path;
        boinc_resolve_filename_s(name.c_str(), path);
        s.replace(at, close + 1 - at, path);
        at += path.size();
    }
    return 0;
}

// Split a command line into words: white space separates, double quotes group.
static std::vector<std::string> split_words(const std::string& s) {
    std::vector<std::string> words;
    std::string word;
    bool in_word = false, quoted = false;
    for (char c : s) {
        if (c == '"') {
            quoted = !quoted;
            in_word = true;
        } else if (!quoted && isspace((unsigned char)c)) {
            if (in_word) words.push_back(word);
            word.clear();
            in_word = false;
        } else {
            word += c;
            in_word = true;
        }
    }
    if (in_word) words.push_back(word);
    return words;
}

// ---------------------------------------------------------------------------
// the program

// The app version's files, as the client lists them in init_data.xml
// (<app_file>): the BOINC runtime of 7.x and 8.x writes them but doesn't read
// them back, so BOINC's own wrapper never sees the list and its check of the
// program is a no-op.
static void read_app_files(APP_INIT_DATA& aid) {
    if (!aid.app_files.empty()) return;
    FILE* f = boinc_fopen(INIT_DATA_FILE, "r");
    if (!f) return;
    MIOFILE mf;
    mf.init_file(f);
    XML_PARSER xp(&mf);
    std::string name;
    while (!xp.get_tag()) {
        if (xp.is_tag && xp.parse_string("app_file", name)) aid.app_files.push_back(name);
    }
    fclose(f);
}

// The program must be one of the app version's files (signed, checked by the
// client), reached through the link the client made in the slot: not an input
// file, not something job.xml names outside the project.
static bool is_app_version_file(const std::string& path, const APP_INIT_DATA& aid,
                                std::string& why) {
#ifdef NO_CHECK_EXECUTABLES
    return true;
#endif
    if (aid.app_files.empty()) return true;     // clients before 7.6 don't list them
    char real[PATH_MAX], project[PATH_MAX];
    if (!realpath(path.c_str(), real)) {
        why = "it doesn't exist";
        return false;
    }
    if (!realpath(aid.project_dir, project)) {
        why = std::string("the project directory ") + aid.project_dir + " doesn't exist";
        return false;
    }
    size_t n = strlen(project);
    if (strncmp(real, project, n) || real[n] != '/') {
        why = "it is not in the project directory (a file of the app version given "
              "<copy_file/> can't be checked: give the program none)";
        return false;
    }
    for (const std::string& name : aid.app_files) {
        if (name == real + n + 1) return true;
    }
    why = "it is not a file of the app version";
    return false;
}

static void redirect(int fd, const std::string& logical, int flags) {
    std::string path;
    boinc_resolve_filename_s(logical.c_str(), path);
    int file = open(path.c_str(), flags, 0644);
    if (file < 0) {
        fprintf(stderr, "wrapper: can't open %s (%s): %s\n", logical.c_str(), path.c_str(),
                strerror(errno));
        _exit(EXIT_CHILD_FAILED);
    }
    dup2(file, fd);
    close(file);
}

// The program's CPU priority, as the client would give a plain app: the
// client runs a wrapper above it (<is_wrapper/>), so the wrapper lowers it
// again, unless the volunteer said otherwise (cc_config.xml's
// <no_priority_change>, <process_priority>).
static void lower_priority(const APP_INIT_DATA& aid) {
    if (aid.no_priority_change) return;
    int priority = aid.process_priority > CONFIG_PRIORITY_UNSPECIFIED
        ? aid.process_priority + 1      // the config scale starts at 0, not 1
        : PROCESS_PRIORITY_LOWEST;
    setpriority(PRIO_PROCESS, 0, process_priority_value(priority));
    if (priority == PROCESS_PRIORITY_LOWEST) {
        struct sched_param sp;
        sp.sched_priority = 0;
        sched_setscheduler(0, SCHED_IDLE, &sp);
    }
}

// fork and exec the program in its own process group; returns its pid
static pid_t start_program(const Task& task, const std::string& program,
                           const std::vector<std::string>& args, const APP_INIT_DATA& aid) {
    // A program restarted from its own checkpoint continues its output files;
    // one without starts over, so they start empty.
    int out_flags = O_WRONLY | O_CREAT | (task.checkpoint_name.empty() ? O_TRUNC : O_APPEND);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid > 0) {
        setpgid(pid, pid);      // also in the child: whichever runs first
        return pid;
    }
    setpgid(0, 0);
    // The program dies with the wrapper, whatever kills the wrapper.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(EXIT_CHILD_FAILED);
    lower_priority(aid);
    if (!task.stdin_name.empty()) redirect(0, task.stdin_name, O_RDONLY);
    if (!task.stdout_name.empty()) {
        redirect(1, task.stdout_name, out_flags);
    } else {
        dup2(2, 1);     // the client sends the app's own stdout to /dev/null
    }
    if (!task.stderr_name.empty()) redirect(2, task.stderr_name, out_flags);
    for (const std::string& e : task.env) {
        size_t eq = e.find('=');
        setenv(e.substr(0, eq).c_str(), e.substr(eq + 1).c_str(), 1);
    }
    if (!task.exec_dir.empty() && chdir(task.exec_dir.c_str())) {
        fprintf(stderr, "wrapper: can't enter %s: %s\n", task.exec_dir.c_str(), strerror(errno));
        _exit(EXIT_CHILD_FAILED);
    }
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(program.c_str()));
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    // A fresh process as far as signals and files go: nothing the BOINC
    // runtime set up in the wrapper (blocked signals, shared memory, lock
    // file) reaches the program.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGPIPE, SIG_DFL);
    closefrom(3);
    execv(program.c_str(), argv.data());
    fprintf(stderr, "wrapper: can't run %s: %s%s\n", program.c_str(), strerror(errno),
            errno == EACCES ? " (was it executable when update_versions installed it?)" : "");
    _exit(127);
}

// SIGTERM to the program's group, then SIGKILL to what is left after the grace time.
static void stop_program(pid_t pid) {
    killpg(pid, SIGTERM);
    killpg(pid, SIGCONT);       // a suspended program must run to act on it
    for (int i = 0; i < GRACE_SECONDS * 10; i++) {
        int status;
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid || (w < 0 && errno == ECHILD)) break;
        boinc_sleep(0.1);
    }
    killpg(pid, SIGKILL);       // the group may outlive its leader
    waitpid(pid, nullptr, WNOHANG);
}

// The last number in the program's progress file, clamped to 0..1; -1 if none.
static double read_fraction_done(const std::string& name) {
    FILE* f = fopen(name.c_str(), "r");
    if (!f) return -1;
    double value = -1, x;
    char line[256];
    while (fgets(line, sizeof(line), f)) {
        if (sscanf(line, "%lf", &x) == 1) value = x;
    }
    fclose(f);
    if (value < 0) return value;
    return value > 1 ? 1 : value;
}

static double children_cpu_time() {
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6
         + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

// ---------------------------------------------------------------------------

int main(int argc, char** argv) {
    int nthreads = 1;
    int device = -1;
    int stop_signal = SIGSTOP;
    bool passthrough = false;
    std::vector<std::string> job_args;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        if (passthrough) {
            job_args.push_back(a);
        } else if (a == "--passthrough_child") {
            passthrough = true;
            job_args.clear();       // from here on, only what follows
        } else if (a == "--nthreads" && i + 1 < argc) {
            nthreads = atoi(argv[++i]);
        } else if (a == "--device" && i + 1 < argc) {
            device = atoi(argv[++i]);
        } else if (a == "--use_tstp") {
            stop_signal = SIGTSTP;
        } else if (a == "--version" || a == "-v") {
            printf("%s\n", WRAPPER_VERSION);
            return 0;
        } else {
            job_args.push_back(a);
        }
    }

    BOINC_OPTIONS options;
    boinc_options_defaults(options);
    options.main_program = true;
    options.check_heartbeat = true;
    options.handle_process_control = true;
    options.send_status_msgs = false;       // the wrapper reports its program's
    options.direct_process_action = false;  // requests come to us as flags
    int retval = boinc_init_options(&options);
    if (retval) {
        fprintf(stderr, "wrapper: boinc_init_options() failed: %d\n", retval);
        return retval;
    }
    say("%s starting", WRAPPER_VERSION);
    APP_INIT_DATA aid;
    boinc_get_init_data(aid);
    read_app_files(aid);

    Task task;
    std::string error;
    retval = parse_job_file(task, error);
    if (retval) give_up(retval, "%s", error.c_str());

    std::string program;
    boinc_resolve_filename_s(task.application.c_str(), program);
    std::string why;
    if (!is_app_version_file(program, aid, why)) {
        give_up(ERR_NO_SIGNATURE, "won't run %s (%s): %s", task.application.c_str(),
                program.c_str(), why.c_str());
    }
    std::string cmdline = task.command_line;
    substitute_macros(cmdline, aid, nthreads, device);
    substitute_macros(task.exec_dir, aid, nthreads, device);
    for (std::string& e : task.env) substitute_macros(e, aid, nthreads, device);
    retval = resolve_phrases(cmdline, error);
    if (retval) give_up(retval, "%s", error.c_str());
    std::vector<std::string> args = split_words(cmdline);
    if (task.append_args) {
        for (std::string a : job_args) {
            retval = resolve_phrases(a, error);
            if (retval) give_up(retval, "%s", error.c_str());
            args.push_back(a);
            cmdline += " " + a;
        }
    } else if (!job_args.empty()) {
        say("the job's arguments are not given to the program (no <append_cmdline_args/>)");
    }
    if (!task.fraction_done_name.empty()) boinc_delete_file(task.fraction_done_name.c_str());

    double base_cpu = aid.wu_cpu_time;      // CPU time of earlier runs
    double checkpoint_cpu = base_cpu;
    time_t checkpoint_mtime = 0;
    struct stat st;
    if (!task.checkpoint_name.empty() && !stat(task.checkpoint_name.c_str(), &st)) {
        checkpoint_mtime = st.st_mtime;
    }

    say("running %s (%s)", program.c_str(), cmdline.c_str());
    pid_t pid = start_program(task, program, args, aid);
    if (pid < 0) give_up(ERR_FORK, "fork() failed: %s", strerror(errno));
    say("program started, pid %d", (int)pid);

    bool suspended = false;
    double cpu = 0, fraction = 0;
    int status = 0;
    for (int tick = 0;; tick++) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) break;
        if (w < 0 && errno != EINTR) give_up(ERR_EXEC, "waitpid(): %s", strerror(errno));
        BOINC_STATUS bs;
        boinc_get_status(&bs);
        if (bs.abort_request || bs.quit_request || bs.no_heartbeat) {
            say("%s: stopping the program", bs.abort_request ? "abort requested"
                : bs.quit_request ? "quit requested" : "no heartbeat from the client");
            stop_program(pid);
            // no boinc_finish: the client restarts the job later (quit) or
            // reports it aborted
            exit(0);
        }
        if ((bs.suspended != 0) != suspended) {
            suspended = bs.suspended != 0;
            killpg(pid, suspended ? stop_signal : SIGCONT);
            say("program %s", suspended ? "suspended" : "resumed");
        }
        if (tick % REPORT_EVERY == 0) {
            double x = process_tree_cpu_time(pid);
            if (x > cpu) cpu = x;
            if (!task.fraction_done_name.empty()) {
                double f = read_fraction_done(task.fraction_done_name);
                if (f >= 0) fraction = f;
            }
            if (!task.checkpoint_name.empty() && !stat(task.checkpoint_name.c_str(), &st)
                    && st.st_mtime != checkpoint_mtime) {
                checkpoint_mtime = st.st_mtime;
                checkpoint_cpu = base_cpu + cpu;
            }
            boinc_report_app_status(base_cpu + cpu, checkpoint_cpu, fraction);
        }
        boinc_sleep(POLL_SECONDS);
    }

    double final_cpu = children_cpu_time();
    if (final_cpu < cpu) final_cpu = cpu;
    // The status channel holds one message: retry until the client took the last.
    for (int i = 0; i < 30; i++) {
        if (!boinc_report_app_status(base_cpu + final_cpu, base_cpu + final_cpu, 1)) break;
        boinc_sleep(0.1);
    }
    if (WIFSIGNALED(status)) {
        say("the program was killed by signal %d; CPU time %.2f s", WTERMSIG(status), final_cpu);
        boinc_finish(EXIT_CHILD_FAILED);
    }
    int code = WEXITSTATUS(status);
    say("the program exited with status %d; CPU time %.2f s", code, final_cpu);
    boinc_finish(code);
}
