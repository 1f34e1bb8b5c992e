/* The POSIX port of the sample firmware: the HAL of hal.h on a pseudo-terminal, so that any serial
 * program (the harness: unohil conform --device PATH) can open the unit. One image per unit kind, as a
 * microcontroller build is (the kind is the hardware's, and an image carries only its own rules): the
 * Makefile builds this file with -DFIRMWARE_FLASH or -DFIRMWARE_LAUNCHER, else it is the Showdown.
 *
 *   showdown-posix [--seed N] [--serial N] [--no-landing-sensor]      (serial: pid * 4096 unless given)
 *   flash-posix    [--seed N] [--serial N] [--players N]              (Player buttons, 2..8; 6 unless given)
 *   launcher-posix [--seed N] [--serial N]
 *
 * prints the pty's path on its first line, then serves until SIGINT or SIGTERM. The µs counter is
 * CLOCK_MONOTONIC; the pins read released (nobody stands at a pty); lights are only reported.
 * Output waits in a buffer while the host does not read (as a UART's FIFO would, bounded: beyond it
 * frames are dropped and EVENT_RESEND recovers the events). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "hal.h"
#include "../uhil_framing.h"
#include "unit.h"

#if defined(FIRMWARE_FLASH)
#include "flash.h"
#define PROGRAM "flash-posix"
#define KIND_OPTIONS " [--players N]"
static struct flash game;
static struct game_ops flash_image;            /* flash_ops with this base's number of Player buttons */
#elif defined(FIRMWARE_LAUNCHER)
#include "launcher.h"
#define PROGRAM "launcher-posix"
#define KIND_OPTIONS ""
static struct launcher game;
#else
#include "showdown.h"
#define PROGRAM "showdown-posix"
#define KIND_OPTIONS " [--no-landing-sensor]"
static struct showdown game;
#endif

#define OUT_SIZE 65536

static int master = -1;
static uint8_t out[OUT_SIZE];
static size_t out_len;
static volatile sig_atomic_t stopping;

uint32_t hal_micros(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint32_t)((uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u);
}

static void drain(void)
{
    while (out_len) {
        ssize_t w = write(master, out, out_len);
        if (w <= 0)
            return;                     /* EAGAIN: the host is not reading; try again later */
        memmove(out, out + w, out_len - (size_t)w);
        out_len -= (size_t)w;
    }
}

void hal_send(const uint8_t *bytes, size_t n)
{
    if (out_len + n > OUT_SIZE)
        return;                         /* a full FIFO drops the frame whole */
    memcpy(out + out_len, bytes, n);
    out_len += n;
    drain();
}

int hal_read_pin(uint8_t pin)
{
    (void)pin;
    return 0;
}

void hal_set_light(uint8_t light, uint8_t mode, uint8_t target)
{
    (void)light; (void)mode; (void)target;
}

uint32_t hal_entropy(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint32_t)ts.tv_nsec ^ (uint32_t)ts.tv_sec ^ (uint32_t)getpid() << 16;
}

static void raw(int fd)
{
    struct termios t;
    if (tcgetattr(fd, &t) != 0)
        return;
    t.c_iflag &= ~(tcflag_t)(IGNBRK | BRKINT | PARMRK | ISTRIP | INLCR | IGNCR | ICRNL | IXON);
    t.c_oflag &= ~(tcflag_t)OPOST;
    t.c_lflag &= ~(tcflag_t)(ECHO | ECHONL | ICANON | ISIG | IEXTEN);
    t.c_cflag &= ~(tcflag_t)(CSIZE | PARENB);
    t.c_cflag |= CS8;
    t.c_cc[VMIN] = 1;
    t.c_cc[VTIME] = 0;
    tcsetattr(fd, TCSANOW, &t);
}

static void on_signal(int sig)
{
    (void)sig;
    stopping = 1;
}

static int open_pty(char *path, size_t size)
{
    int slave;
    const char *name;
    master = posix_openpt(O_RDWR | O_NOCTTY);
    if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0 || (name = ptsname(master)) == NULL)
        return -1;
    strncpy(path, name, size - 1);
    path[size - 1] = 0;
    /* the port keeps the slave open too: a host may close and reopen the path without a hang-up */
    slave = open(path, O_RDWR | O_NOCTTY);
    if (slave < 0)
        return -1;
    raw(master);
    raw(slave);
    fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK);
    return slave;
}

static uint32_t number(const char *s, const char *what)
{
    char *end;
    unsigned long v = strtoul(s, &end, 0);
    if (*s == 0 || *end != 0 || v > 0xFFFFFFFFul) {
        fprintf(stderr, PROGRAM ": %s must be a u32, not %s\n", what, s);
        exit(2);
    }
    return (uint32_t)v;
}

/* the kind's own option at argv[i] (with its value, *i advanced); 0 when it is not one */
static int kind_option(int argc, char **argv, int *i, const struct game_ops **ops)
{
#if defined(FIRMWARE_FLASH)
    if (strcmp(argv[*i], "--players") == 0 && *i + 1 < argc) {
        uint32_t n = number(argv[++*i], "--players");
        if (n < 2 || n > FLASH_BUTTONS) {
            fprintf(stderr, PROGRAM ": --players must be 2 to %d, not %lu\n", FLASH_BUTTONS, (unsigned long)n);
            exit(2);
        }
        flash_image.players = (uint8_t)n;
        return 1;
    }
#elif !defined(FIRMWARE_LAUNCHER)
    if (strcmp(argv[*i], "--no-landing-sensor") == 0) {
        *ops = &showdown_ops_no_sensor;
        return 1;
    }
#endif
    (void)argc; (void)argv; (void)i; (void)ops;
    return 0;
}

int main(int argc, char **argv)
{
    static struct unit u;
#if defined(FIRMWARE_FLASH)
    const struct game_ops *ops = &flash_image;
#elif defined(FIRMWARE_LAUNCHER)
    const struct game_ops *ops = &launcher_ops;
#else
    const struct game_ops *ops = &showdown_ops;
#endif
    uint32_t seed = 1;
    /* a serial of its own, from the pid (as the Python emulator's unit 0: pid * 4096, never
       NONE_U32): two copies running on one host are two units to the harness's claims */
    uint32_t serial = (uint32_t)(((uint64_t)getpid() * 4096u) % 0xFFFFFFFFull);
    char path[128];
    int i;
#if defined(FIRMWARE_FLASH)
    flash_image = flash_ops;
#endif
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
            seed = number(argv[++i], "--seed");
        } else if (strcmp(argv[i], "--serial") == 0 && i + 1 < argc) {
            serial = number(argv[++i], "--serial");
        } else if (!kind_option(argc, argv, &i, &ops)) {
            fprintf(stderr, "usage: " PROGRAM " [--seed N] [--serial N]" KIND_OPTIONS "\n");
            return 2;
        }
    }
    if (open_pty(path, sizeof path) < 0) {
        perror(PROGRAM ": cannot open a pty");
        return 2;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    printf("%s\n", path);
    fflush(stdout);
#if !defined(FIRMWARE_FLASH) && !defined(FIRMWARE_LAUNCHER)
    game.landing_sensor = ops == &showdown_ops;
#endif
    unit_start(&u, ops, &game, serial, seed);
    while (!stopping) {
        fd_set rd, wr;
        struct timespec wait = {0, 100000000L};   /* nothing scheduled: look at the pins every 100 ms */
        uint32_t at;
        sigset_t none;
        unit_poll(&u);
        if (unit_next_due(&u, &at)) {
            int32_t ahead = uhil_diff(at, unit_now(&u));
            if (ahead <= 0)
                continue;
            wait.tv_sec = ahead / 1000000;
            wait.tv_nsec = (long)(ahead % 1000000) * 1000L;
        }
        FD_ZERO(&rd);
        FD_ZERO(&wr);
        FD_SET(master, &rd);
        if (out_len)
            FD_SET(master, &wr);
        sigemptyset(&none);
        if (pselect(master + 1, &rd, &wr, NULL, &wait, &none) < 0 && errno != EINTR)
            break;
        if (FD_ISSET(master, &rd)) {
            uint8_t buf[512];
            ssize_t n = read(master, buf, sizeof buf);
            if (n > 0)
                unit_receive(&u, buf, (size_t)n, unit_now(&u));
        }
        drain();
    }
    return 0;
}
