/* oracle252 answers questions about strings with the functions of systemd
 * 252's private shared library, libsystemd-shared-252.so, so that the tests
 * of package unit can compare their results with systemd's own. It is built
 * by oracle_test.go; the prototypes below are those of systemd 252.
 *
 * Protocol: one request per line, "COMMAND HEX", where HEX is the argument
 * in hexadecimal; one reply per line. Strings in replies are hexadecimal. */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

typedef struct sd_bus sd_bus;
typedef struct sd_bus_message sd_bus_message;

int parse_sec(const char *t, uint64_t *ret);
int parse_size(const char *t, uint64_t base, uint64_t *size);
bool unit_name_is_valid(const char *n, int flags);
int extract_first_word(const char **p, char **ret, const char *separators, int flags);
char *bus_label_escape(const char *s);
char *unit_name_escape(const char *f);
int unit_name_path_escape(const char *f, char **ret);
int unit_name_unescape(const char *f, char **ret);
char **replace_env_argv(char **argv, char **env);
int bus_append_unit_property_assignment(sd_bus_message *m, int unit_type, const char *assignment);
void log_set_max_level(int level);

int sd_bus_new(sd_bus **ret);
int sd_bus_set_fd(sd_bus *bus, int input_fd, int output_fd);
int sd_bus_start(sd_bus *bus);
int sd_bus_message_new_method_call(sd_bus *bus, sd_bus_message **m, const char *destination,
                                   const char *path, const char *interface, const char *member);
int sd_bus_message_open_container(sd_bus_message *m, char type, const char *contents);
int sd_bus_message_close_container(sd_bus_message *m);
int sd_bus_message_enter_container(sd_bus_message *m, char type, const char *contents);
int sd_bus_message_exit_container(sd_bus_message *m);
int sd_bus_message_peek_type(sd_bus_message *m, char *type, const char **contents);
int sd_bus_message_read_basic(sd_bus_message *m, char type, void *p);
int sd_bus_message_seal(sd_bus_message *m, uint64_t cookie, uint64_t timeout_usec);
int sd_bus_message_rewind(sd_bus_message *m, int complete);
sd_bus_message *sd_bus_message_unref(sd_bus_message *m);

enum { UNIT_NAME_PLAIN = 1, UNIT_NAME_INSTANCE = 2, UNIT_NAME_TEMPLATE = 4 };
enum { EXTRACT_CUNESCAPE = 1 << 1, EXTRACT_UNQUOTE = 1 << 5 };
enum { UNIT_SERVICE = 0 };

static char *unhex(const char *h) {
        size_t n = strlen(h) / 2;
        char *s = calloc(n + 1, 1);
        for (size_t i = 0; i < n; i++) {
                unsigned v;
                sscanf(h + 2 * i, "%2x", &v);
                s[i] = (char) v;
        }
        return s;
}

static void puthex(const char *s) {
        if (!*s)
                putchar('-'); /* the empty string */
        for (; *s; s++)
                printf("%02x", (unsigned char) *s);
}

static void print_value(sd_bus_message *m, char type, const char *contents);

/* print_items prints the values left in the container m is in, separated
 * by sep. */
static void print_items(sd_bus_message *m, const char *sep) {
        const char *contents;
        char type;
        bool first = true;

        while (sd_bus_message_peek_type(m, &type, &contents) > 0) {
                if (!first)
                        printf("%s", sep);
                first = false;
                print_value(m, type, contents);
        }
}

/* print_value prints the next value: a string in hex ("-" if empty), a
 * boolean as 0 or 1, a number in decimal, an array as [a,b], a struct as
 * (a b). */
static void print_value(sd_bus_message *m, char type, const char *contents) {
        union {
                const char *s;
                int b;
                uint8_t y;
                int16_t n;
                uint16_t q;
                int32_t i;
                uint32_t u;
                int64_t x;
                uint64_t t;
        } v;

        switch (type) {
        case 'a':
        case 'r':
        case 'v':
                sd_bus_message_enter_container(m, type, contents);
                printf("%s", type == 'a' ? "[" : type == 'r' ? "(" : "");
                print_items(m, type == 'a' ? "," : " ");
                printf("%s", type == 'a' ? "]" : type == 'r' ? ")" : "");
                sd_bus_message_exit_container(m);
                return;
        }
        sd_bus_message_read_basic(m, type, &v);
        switch (type) {
        case 's':
                puthex(v.s);
                break;
        case 'b':
                printf("%d", v.b);
                break;
        case 'y':
                printf("%u", v.y);
                break;
        case 'n':
                printf("%d", v.n);
                break;
        case 'q':
                printf("%u", v.q);
                break;
        case 'i':
                printf("%d", v.i);
                break;
        case 'u':
                printf("%u", v.u);
                break;
        case 'x':
                printf("%lld", (long long) v.x);
                break;
        case 't':
                printf("%llu", (unsigned long long) v.t);
                break;
        default:
                printf("?");
        }
}

/* prop prints the properties the assignment turns into, as
 * "ok NAME SIG VALUE NAME SIG VALUE ...", with values as print_value
 * prints them, or "err". */
static void prop(sd_bus *bus, const char *assignment) {
        sd_bus_message *m = NULL;
        const char *contents;
        char type;

        sd_bus_message_new_method_call(bus, &m, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                       "org.freedesktop.systemd1.Manager", "StartTransientUnit");
        sd_bus_message_open_container(m, 'a', "(sv)");
        if (bus_append_unit_property_assignment(m, UNIT_SERVICE, assignment) < 0) {
                printf("err\n");
                sd_bus_message_unref(m);
                return;
        }
        sd_bus_message_close_container(m);
        sd_bus_message_seal(m, 1, 0);
        sd_bus_message_rewind(m, 1);
        sd_bus_message_enter_container(m, 'a', "(sv)");
        printf("ok");
        while (sd_bus_message_enter_container(m, 'r', "sv") > 0) {
                const char *name;
                sd_bus_message_read_basic(m, 's', &name);
                sd_bus_message_peek_type(m, &type, &contents);
                printf(" %s %s ", name, contents);
                print_value(m, type, contents);
                sd_bus_message_exit_container(m);
        }
        printf("\n");
        sd_bus_message_unref(m);
}

static void words(const char *arg, int flags) {
        const char *p = arg;
        int r;

        printf("ok");
        for (;;) {
                char *w = NULL;
                r = extract_first_word(&p, &w, NULL, flags);
                if (r <= 0)
                        break;
                putchar(' ');
                puthex(w);
                free(w);
        }
        if (r < 0)
                printf(" err");
        printf("\n");
}

/* replenv replaces variables in argv, given as hex words separated by
 * commas, with an empty environment. */
static void replenv(const char *arg) {
        char *copy = strdup(arg), *argv[1024] = {}, *env[] = { NULL };
        size_t n = 0;

        for (char *t = strtok(copy, ","); t && n < 1023; t = strtok(NULL, ","))
                argv[n++] = unhex(t);
        char **out = replace_env_argv(argv, env);
        printf("ok");
        for (char **i = out; i && *i; i++) {
                putchar(' ');
                puthex(*i);
        }
        printf("\n");
}

int main(void) {
        static char line[1 << 21];
        sd_bus *bus = NULL;
        int fds[2];

        log_set_max_level(2); /* LOG_CRIT: keep systemd's error messages quiet */

        /* Messages need a bus that has been started; an unconnected socket does. */
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) < 0 || sd_bus_new(&bus) < 0 ||
            sd_bus_set_fd(bus, fds[0], fds[0]) < 0 || sd_bus_start(bus) < 0) {
                fprintf(stderr, "oracle252: cannot set up a bus\n");
                return 1;
        }
        setvbuf(stdout, NULL, _IOLBF, 0);

        while (fgets(line, sizeof line, stdin)) {
                char *sp, *arg, *s;
                uint64_t u = 0;
                int r;

                line[strcspn(line, "\n")] = 0;
                sp = strchr(line, ' ');
                if (!sp) {
                        printf("?\n");
                        continue;
                }
                *sp = 0;
                arg = unhex(sp + 1);

                if (strcmp(line, "sec") == 0) {
                        r = parse_sec(arg, &u);
                        r < 0 ? printf("err\n") : printf("ok %llu\n", (unsigned long long) u);
                } else if (strcmp(line, "size") == 0) {
                        r = parse_size(arg, 1024, &u);
                        r < 0 ? printf("err\n") : printf("ok %llu\n", (unsigned long long) u);
                } else if (strcmp(line, "name") == 0)
                        printf("ok %d\n", unit_name_is_valid(arg, UNIT_NAME_PLAIN|UNIT_NAME_INSTANCE|UNIT_NAME_TEMPLATE));
                else if (strcmp(line, "label") == 0) {
                        s = bus_label_escape(arg);
                        printf("ok %s\n", s);
                        free(s);
                } else if (strcmp(line, "escape") == 0) {
                        s = unit_name_escape(arg);
                        printf("ok ");
                        puthex(s);
                        printf("\n");
                        free(s);
                } else if (strcmp(line, "pathescape") == 0) {
                        if (unit_name_path_escape(arg, &s) < 0)
                                printf("err\n");
                        else {
                                printf("ok ");
                                puthex(s);
                                printf("\n");
                                free(s);
                        }
                } else if (strcmp(line, "unescape") == 0) {
                        if (unit_name_unescape(arg, &s) < 0)
                                printf("err\n");
                        else {
                                printf("ok ");
                                puthex(s);
                                printf("\n");
                                free(s);
                        }
                } else if (strcmp(line, "words") == 0)
                        words(arg, EXTRACT_UNQUOTE);
                else if (strcmp(line, "cwords") == 0)
                        words(arg, EXTRACT_UNQUOTE|EXTRACT_CUNESCAPE);
                else if (strcmp(line, "replenv") == 0)
                        replenv(sp + 1);
                else if (strcmp(line, "prop") == 0)
                        prop(bus, arg);
                else
                        printf("?\n");
                free(arg);
        }
        return 0;
}
