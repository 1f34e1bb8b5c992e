/* The protocol side of a unit: see unit.h. SPEC sections are cited where a rule is implemented. */
#include <string.h>

#include "hal.h"
#include "unit.h"
#include "../uhil_framing.h"

/* IDENTITY's firmware version; a release build sets its own (make CFLAGS=-DFIRMWARE_PATCH=N) */
#ifndef FIRMWARE_MAJOR
#define FIRMWARE_MAJOR 0
#endif
#ifndef FIRMWARE_MINOR
#define FIRMWARE_MINOR 1
#endif
#ifndef FIRMWARE_PATCH
#define FIRMWARE_PATCH 0
#endif

static void boot(struct unit *u, uint8_t reason);

uint32_t unit_now(const struct unit *u)
{
    return hal_micros() - u->epoch;
}

uhil_rng *unit_rng(struct unit *u)
{
    return &u->rng;
}

uint32_t unit_stamp(struct unit *u, uint32_t t)
{
    uint32_t old = u->stamp;
    u->stamp = t;
    return old;
}

const struct disposition UNIT_ACTED = {UHIL_DISPOSITION_ACTED, 0};
const struct disposition UNIT_REPORTED = {UHIL_DISPOSITION_REPORTED, 0};

struct disposition unit_refused(uint8_t error)
{
    struct disposition d;
    d.disposition = UHIL_DISPOSITION_REFUSED;
    d.error = error;
    return d;
}

static int param_slot(const struct unit *u, uint8_t param)
{
    const struct uhil_param *p = uhil_param_find(param, u->ops->kind);
    return p ? (int)(p - uhil_params) : -1;
}

uint32_t unit_param(const struct unit *u, uint8_t param)
{
    int slot = param_slot(u, param);
    return slot < 0 ? 0 : u->config[slot];
}

uint32_t unit_param_after(const struct unit *u, uint8_t param, uint8_t set, uint32_t value)
{
    return param == set ? value : unit_param(u, param);
}

/* ---- frames out ---- */

static void send(struct unit *u, struct uhil_msg *m, uint32_t time_us)
{
    uint8_t wire[UHIL_MAX_ENCODED];
    size_t n;
    m->version = UHIL_VERSION_BYTE;
    m->seq = u->tx_seq++;
    m->time_us = time_us;
    n = uhil_msg_encode(m, wire);
    hal_send(wire, n);
}

static void send_ring(struct unit *u, const struct ring_event *e)
{
    uint8_t wire[UHIL_MAX_ENCODED];
    size_t n = uhil_frame_build(UHIL_VERSION_BYTE, e->type, u->tx_seq++, e->time_us, e->payload, e->len, wire);
    hal_send(wire, n);
}

static struct ring_event *ring_at(struct unit *u, unsigned back)   /* back = 1: the newest */
{
    return &u->ring[(u->ring_next + UHIL_EVENT_BUFFER - back) % UHIL_EVENT_BUFFER];
}

static void flush(struct unit *u)
{
    while (u->unsent) {
        send_ring(u, ring_at(u, u->unsent));
        u->unsent--;
    }
}

static void nak(struct unit *u, uint16_t cmd_seq, uint8_t cmd_type, uint8_t error, uint8_t detail)
{
    struct uhil_msg m;
    memset(&m, 0, sizeof m);
    m.type = UHIL_NAK_ID;
    m.u.nak = (struct uhil_nak){cmd_seq, cmd_type, error, detail};
    send(u, &m, unit_now(u));
}

static void ack(struct unit *u, uint16_t cmd_seq, uint8_t cmd_type, uint16_t value)
{
    struct uhil_msg m;
    memset(&m, 0, sizeof m);
    m.type = UHIL_ACK_ID;
    m.u.ack = (struct uhil_ack){cmd_seq, cmd_type, value};
    send(u, &m, unit_now(u));
}

/* ---- events (SPEC 4.5) ---- */

static struct ring_event *event_at(struct unit *u, struct uhil_msg *m, uint32_t time_us)
{
    struct ring_event *e = &u->ring[u->ring_next];
    int len = uhil_msg_pack(m, e->payload);
    e->len = (uint8_t)(len < 0 ? 0 : len);
    e->type = m->type;
    e->event_seq = u->event_seq++;
    e->payload[0] = (uint8_t)e->event_seq;     /* every event's first field is event_seq */
    e->payload[1] = (uint8_t)(e->event_seq >> 8);
    e->time_us = time_us;
    u->ring_next = (uint8_t)((u->ring_next + 1) % UHIL_EVENT_BUFFER);
    if (u->ring_count < UHIL_EVENT_BUFFER)
        u->ring_count++;
    if (m->type == UHIL_LIGHT_ID)
        hal_set_light(m->u.light.light, m->u.light.mode, m->u.light.target);
    if (u->holding)
        u->unsent++;
    else
        send_ring(u, e);
    return e;
}

void unit_event(struct unit *u, struct uhil_msg *m)
{
    event_at(u, m, u->stamp);
}

void unit_verdict(struct unit *u, struct uhil_msg *m)
{
    /* a verdict carries the moment it was produced (SPEC 3.1, PR-1), never before the work it closes
       began; what it brings in this work (STATE, lights) carries the same time (PR-7) */
    uint32_t now = unit_now(u);
    if ((int32_t)(now - u->stamp) < 0)
        now = u->stamp;
    u->stamp = now;
    event_at(u, m, now);
}

void unit_emit(struct unit *u, uint8_t type, struct uhil_msg *m)
{
    m->type = type;
    unit_event(u, m);
}

void unit_light(struct unit *u, uint8_t light, uint8_t mode, uint8_t target)
{
    struct uhil_msg m;
    memset(&m, 0, sizeof m);
    m.u.light.light = light;
    m.u.light.mode = mode;
    m.u.light.target = target;
    unit_emit(u, UHIL_LIGHT_ID, &m);
}

void unit_sound(struct unit *u, uint8_t sound, uint16_t arg)
{
    struct uhil_msg m;
    memset(&m, 0, sizeof m);
    m.u.sound.sound = sound;
    m.u.sound.arg = arg;
    unit_emit(u, UHIL_SOUND_ID, &m);
}

void unit_state(struct unit *u, uint8_t state, uint8_t previous)
{
    struct uhil_msg m;
    memset(&m, 0, sizeof m);
    m.u.state.state = state;
    m.u.state.previous = previous;
    unit_emit(u, UHIL_STATE_ID, &m);
}

void unit_change_state(struct unit *u, uint8_t *state, uint8_t next)
{
    uint8_t previous = *state;
    if (next == previous)
        return;
    *state = next;
    unit_state(u, next, previous);
}

/* ---- inputs (SPEC 4.8) ---- */

static int valid_input(const struct unit *u, uint8_t input, uint8_t action)
{
    return input < u->ops->n_inputs && action <= UHIL_ACTION_PRESS;
}

/* One input edge at t: INPUT_SEEN first, then what the game made of it. */
static struct disposition apply_input(struct unit *u, uint32_t t, uint8_t input, uint8_t action, uint8_t value,
                                      uint8_t source)
{
    struct uhil_msg m;
    struct ring_event *seen;
    struct disposition d;
    uint8_t outer = u->holding;
    uint32_t stamp = unit_stamp(u, t);
    memset(&m, 0, sizeof m);
    m.type = UHIL_INPUT_SEEN_ID;
    m.u.input_seen.input = input;
    m.u.input_seen.action = action;
    m.u.input_seen.value = value;
    m.u.input_seen.source = source;
    u->holding = 1;                     /* the disposition is written in once the game has answered */
    seen = event_at(u, &m, t);
    if (value && !((u->ops->valued_inputs >> input) & 1u)) {
        d.disposition = UHIL_DISPOSITION_REFUSED;       /* PR-3: the game never sees the edge */
        d.error = UHIL_ERROR_BAD_VALUE;
    } else {
        d = u->ops->on_input(u->game, u, t, input, action, value);
    }
    seen->payload[6] = d.disposition;   /* INPUT_SEEN: disposition at offset 6, detail at 7 */
    seen->payload[7] = d.disposition == UHIL_DISPOSITION_REFUSED ? d.error : 0;
    u->holding = outer;
    if (!outer)
        flush(u);
    unit_stamp(u, stamp);
    return d;
}

/* ---- what is due ---- */

static struct stimulus *next_stimulus(struct unit *u)
{
    struct stimulus *best = NULL;
    size_t i;
    for (i = 0; i < UHIL_INJECT_QUEUE; i++) {
        struct stimulus *s = &u->stimuli[i];
        if (!s->id)
            continue;
        if (!best || uhil_diff(s->at_us, best->at_us) < 0 ||
            (s->at_us == best->at_us && s->order < best->order))
            best = s;
    }
    return best;
}

static int pending_stimuli(const struct unit *u)
{
    int n = 0;
    size_t i;
    for (i = 0; i < UHIL_INJECT_QUEUE; i++)
        n += u->stimuli[i].id != 0;
    return n;
}

int unit_next_due(const struct unit *u, uint32_t *at)
{
    struct stimulus *s = next_stimulus((struct unit *)u);
    uint32_t d;
    int has = u->ops->deadline(u->game, &d);
    if (s && (!has || uhil_diff(s->at_us, d) <= 0)) {
        *at = s->at_us;
        return 1;
    }
    if (has)
        *at = d;
    return has;
}

/* Run, in time order, the stimuli due at or before t and the game's deadline due before t (or at t
 * too, when timers_at_t): inputs before timers at one instant (SPEC 4.8). */
static void run_due(struct unit *u, uint32_t t, int timers_at_t)
{
    for (;;) {
        struct stimulus *s = next_stimulus(u);
        uint32_t d;
        int has = u->ops->deadline(u->game, &d);
        int timer_due = has && (uhil_diff(d, t) < 0 || (timers_at_t && d == t));
        if (s && uhil_diff(s->at_us, t) <= 0 && (!timer_due || uhil_diff(s->at_us, d) <= 0)) {
            struct stimulus run = *s;
            s->id = 0;
            apply_input(u, run.at_us, run.input, run.action, run.value, UHIL_INPUT_SOURCE_INJECTED);
        } else if (timer_due) {
            uint32_t stamp = unit_stamp(u, d);       /* a timer's events carry its scheduled time (PR-1) */
            u->ops->run_deadline(u->game, u, d);
            unit_stamp(u, stamp);
        } else {
            return;
        }
    }
}

void unit_deadlines_until(struct unit *u, uint32_t t)
{
    uint32_t at;
    while (u->ops->deadline(u->game, &at) && uhil_diff(at, t) <= 0) {
        uint32_t stamp = unit_stamp(u, at);
        u->ops->run_deadline(u->game, u, at);
        unit_stamp(u, stamp);
    }
}

void unit_poll(struct unit *u)
{
    uint32_t now = unit_now(u);
    uint8_t pin;
    run_due(u, now, 1);
    for (pin = 0; pin < u->ops->n_pins; pin++) {
        uint16_t level = hal_read_pin(pin) ? 1u : 0u;
        if (level != ((u->pins >> pin) & 1u)) {
            u->pins = (uint16_t)(u->pins ^ (1u << pin));
            apply_input(u, now, u->ops->pin_inputs[pin], level ? UHIL_ACTION_PRESS : UHIL_ACTION_RELEASE, 0,
                        UHIL_INPUT_SOURCE_PHYSICAL);
        }
    }
}

/* ---- commands (SPEC 4.2-4.9) ---- */

static void identity(struct unit *u, uint16_t cmd_seq)
{
    struct uhil_msg m;
    struct uhil_identity *id = &m.u.identity;
    memset(&m, 0, sizeof m);
    m.type = UHIL_IDENTITY_ID;
    id->cmd_seq = cmd_seq;
    id->kind = u->ops->kind;
    id->proto_major = UHIL_PROTO_MAJOR;
    id->proto_minor = UHIL_PROTO_MINOR;
    id->fw_major = FIRMWARE_MAJOR;
    id->fw_minor = FIRMWARE_MINOR;
    id->fw_patch = FIRMWARE_PATCH;
    id->serial = u->serial;
    id->boot_id = u->boot_id;
    id->caps = u->ops->caps;
    id->catalog_crc = UHIL_CATALOG_CRC;
    id->card_capacity = u->ops->card_capacity;
    id->players = u->ops->players;
    id->event_buffer = UHIL_EVENT_BUFFER;
    id->inject_queue = UHIL_INJECT_QUEUE;
    id->seed = unit_param(u, UHIL_PARAM_RNG_SEED);
    send(u, &m, unit_now(u));
}

static void config_value(struct unit *u, uint16_t cmd_seq, uint8_t param)
{
    struct uhil_msg m;
    memset(&m, 0, sizeof m);
    m.type = UHIL_CONFIG_VALUE_ID;
    m.u.config_value.cmd_seq = cmd_seq;
    m.u.config_value.param = param;
    m.u.config_value.value = unit_param(u, param);
    send(u, &m, unit_now(u));
}

/* CONFIG_SET: unknown_param, wrong_state, bad_value, in that order (SPEC 4.3); 0 when set */
static uint8_t config_set(struct unit *u, uint8_t param, uint32_t value)
{
    const struct uhil_param *p = uhil_param_find(param, u->ops->kind);
    if (!p)
        return UHIL_ERROR_UNKNOWN_PARAM;
    if (!u->ops->idle(u->game))
        return UHIL_ERROR_WRONG_STATE;
    if (value < p->min || value > p->max || !u->ops->config_ok(u, param, value))
        return UHIL_ERROR_BAD_VALUE;
    u->config[p - uhil_params] = value;
    if (param == UHIL_PARAM_RNG_SEED)
        uhil_rng_seed(&u->rng, value);      /* setting the seed restarts the generator (SPEC 4.7) */
    return 0;
}

static void status(struct unit *u, uint16_t cmd_seq)
{
    struct uhil_msg m;
    memset(&m, 0, sizeof m);
    m.type = UHIL_STATUS_ID;
    m.u.status.cmd_seq = cmd_seq;
    m.u.status.state = u->ops->state(u->game);
    m.u.status.cards = u->ops->cards(u->game);
    m.u.status.next_event_seq = u->event_seq;
    m.u.status.pending_injects = (uint8_t)pending_stimuli(u);
    m.u.status.boot_id = u->boot_id;
    send(u, &m, unit_now(u));
}

static void event_resend(struct unit *u, uint16_t cmd_seq, uint16_t first, uint8_t count)
{
    unsigned back, n = 0;
    for (back = u->ring_count; back >= 1; back--)
        n += (uint16_t)(ring_at(u, back)->event_seq - first) < count;
    ack(u, cmd_seq, UHIL_EVENT_RESEND_ID, (uint16_t)n);
    for (back = u->ring_count; back >= 1; back--) {       /* oldest first, same header time */
        const struct ring_event *e = ring_at(u, back);
        if ((uint16_t)(e->event_seq - first) < count)
            send_ring(u, e);
    }
}

/* INJECT: bad_value, too_late, queue_full (SPEC 4.8); 0 and *id when queued */
static uint8_t inject(struct unit *u, const struct uhil_inject *m, uint32_t t, uint16_t *id)
{
    size_t i;
    if (!valid_input(u, m->input, m->action))
        return UHIL_ERROR_BAD_VALUE;
    if (uhil_diff(m->at_us, t) <= 0)
        return UHIL_ERROR_TOO_LATE;
    for (i = 0; i < UHIL_INJECT_QUEUE; i++) {
        struct stimulus *s = &u->stimuli[i];
        if (s->id)
            continue;
        u->stimulus_id = (uint16_t)(u->stimulus_id % 0xFFFFu + 1u);      /* 1..65535, never 0 */
        s->id = u->stimulus_id;
        s->order = u->stimulus_order++;
        s->at_us = m->at_us;
        s->input = m->input;
        s->action = m->action;
        s->value = m->value;
        *id = s->id;
        return 0;
    }
    return UHIL_ERROR_QUEUE_FULL;
}

static uint16_t inject_cancel(struct unit *u)
{
    uint16_t n = (uint16_t)pending_stimuli(u);
    memset(u->stimuli, 0, sizeof u->stimuli);
    return n;
}

static void new_game(struct unit *u, uint32_t t)
{
    uint8_t previous = u->ops->state(u->game);
    uint32_t stamp = unit_stamp(u, t);
    u->ops->shutdown(u->game, u);
    unit_state(u, u->ops->state(u->game), previous);     /* even when the state is unchanged (SPEC 4.9) */
    unit_stamp(u, stamp);
}

/* one command at device time t; events it causes are held until its reply is out (SPEC 4.3) */
static void command(struct unit *u, const struct uhil_msg *c, uint32_t t)
{
    uint8_t error = 0, detail = 0;
    uint16_t cap = uhil_command_capability(c->type);
    u->holding = 1;
    if (cap && !(u->ops->caps & cap)) {
        error = UHIL_ERROR_UNSUPPORTED;
    } else {
        switch (c->type) {
        case UHIL_HELLO_ID:
            if (c->u.hello.host_major != UHIL_PROTO_MAJOR) {
                error = UHIL_ERROR_BAD_VERSION;
                detail = UHIL_PROTO_MAJOR;
            } else {
                identity(u, c->seq);
            }
            break;
        case UHIL_TIME_SYNC_ID: {
            struct uhil_msg m;
            memset(&m, 0, sizeof m);
            m.type = UHIL_TIME_SYNC_REPLY_ID;
            m.u.time_sync_reply.cmd_seq = c->seq;
            m.u.time_sync_reply.t1_host_us = c->u.time_sync.t1_host_us;
            m.u.time_sync_reply.t2_us = t;
            m.u.time_sync_reply.t3_us = unit_now(u);
            send(u, &m, m.u.time_sync_reply.t3_us);     /* the header time is t3 */
            break;
        }
        case UHIL_CONFIG_GET_ID:
            if (param_slot(u, c->u.config_get.param) < 0)
                error = UHIL_ERROR_UNKNOWN_PARAM;
            else
                config_value(u, c->seq, c->u.config_get.param);
            break;
        case UHIL_CONFIG_SET_ID:
            error = config_set(u, c->u.config_set.param, c->u.config_set.value);
            if (!error)
                config_value(u, c->seq, c->u.config_set.param);
            break;
        case UHIL_STATUS_GET_ID:
            status(u, c->seq);
            break;
        case UHIL_EVENT_RESEND_ID:
            event_resend(u, c->seq, c->u.event_resend.first_seq, c->u.event_resend.count);
            break;
        case UHIL_INPUT_ID:
            if (!valid_input(u, c->u.input.input, c->u.input.action)) {
                error = UHIL_ERROR_BAD_VALUE;
            } else {
                struct disposition d = apply_input(u, t, c->u.input.input, c->u.input.action, c->u.input.value,
                                                   UHIL_INPUT_SOURCE_HOST);
                if (d.disposition == UHIL_DISPOSITION_REFUSED)
                    error = d.error;
                else
                    ack(u, c->seq, c->type, 0);
            }
            break;
        case UHIL_INJECT_ID: {
            uint16_t id = 0;
            error = inject(u, &c->u.inject, t, &id);
            if (!error)
                ack(u, c->seq, c->type, id);
            break;
        }
        case UHIL_INJECT_CANCEL_ID:
            ack(u, c->seq, c->type, inject_cancel(u));
            break;
        case UHIL_RESET_ID:
            if (c->u.reset.mode == UHIL_RESET_MODE_REBOOT) {
                ack(u, c->seq, c->type, 0);
                u->holding = 0;
                u->unsent = 0;
                boot(u, UHIL_BOOT_REASON_RESET_COMMAND);
                return;
            }
            if (c->u.reset.mode != UHIL_RESET_MODE_NEW_GAME) {
                error = UHIL_ERROR_BAD_VALUE;
            } else {
                new_game(u, t);
                ack(u, c->seq, c->type, 0);
            }
            break;
        default:
            error = UHIL_ERROR_UNKNOWN_TYPE;      /* the receiver's table lists only the commands */
            break;
        }
    }
    if (error)
        nak(u, c->seq, c->type, error, error == UHIL_ERROR_WRONG_STATE ? u->ops->state(u->game) : detail);
    u->holding = 0;
    flush(u);
}

void unit_receive(struct unit *u, const uint8_t *bytes, size_t n, uint32_t t)
{
    size_t i;
    for (i = 0; i < n; i++) {
        uint16_t owed[4];
        int r = uhil_rx_byte(&u->rx, bytes[i], uhil_device_payload_size);
        if (r == UHIL_RX_FRAME) {
            struct uhil_msg c;
            run_due(u, t, 0);           /* what was due before the frame completed comes first */
            if (uhil_msg_decode(u->rx.buf, u->rx.frame_len, &c) == 0)
                command(u, &c, t);
        } else if (uhil_rx_nak(&u->rx, r, owed)) {
            nak(u, owed[0], (uint8_t)owed[1], (uint8_t)owed[2], (uint8_t)owed[3]);
        }
    }
}

/* ---- boot (SPEC 4.9) ---- */

static void boot(struct unit *u, uint8_t reason)
{
    struct uhil_msg m;
    size_t i;
    u->epoch = hal_micros();            /* device time restarts at 0 */
    u->tx_seq = 0;
    u->event_seq = 0;
    u->ring_next = u->ring_count = u->unsent = u->holding = 0;
    u->stimulus_id = 0;
    memset(u->stimuli, 0, sizeof u->stimuli);
    for (i = 0; i < UHIL_N_PARAMS; i++)
        u->config[i] = uhil_params[i].def;
    u->config[param_slot(u, UHIL_PARAM_RNG_SEED)] = u->boot_seed;
    uhil_rng_seed(&u->rng, u->boot_seed);
    u->boots++;
    /* a boot id drawn from entropy the generator does not see: the seeded draws stay reproducible */
    {
        uhil_rng g;
        uhil_rng_seed(&g, hal_entropy() ^ (u->serial * 2654435761u) ^ u->boots);
        do
            u->boot_id = uhil_rng32(&g);
        while (u->boot_id == 0);
    }
    u->ops->power_on(u->game, u);
    u->stamp = 0;
    memset(&m, 0, sizeof m);
    m.type = UHIL_BOOT_ID;
    m.u.boot.boot_id = u->boot_id;
    m.u.boot.reason = reason;
    unit_event(u, &m);
}

void unit_start(struct unit *u, const struct game_ops *ops, void *game, uint32_t serial, uint32_t boot_seed)
{
    memset(u, 0, sizeof *u);
    u->ops = ops;
    u->game = game;
    u->serial = serial;
    u->boot_seed = boot_seed;
    uhil_rx_init(&u->rx);
    boot(u, UHIL_BOOT_REASON_POWER_ON);
}
