/* The Showdown unit (SPEC 7). Windows are half-open, each starting at its cause: a paddle press counts
 * from the green time inclusive (1 us earlier is a false start); a second press ties while
 * t2 - t1 < tie_window_us; a first press is in time while t < G + go_timeout_us. Inputs run before
 * timers at one instant (SPEC 4.8), so a press at exactly a deadline reaches on_input while the
 * deadline is still pending: catch_up runs the deadline's work first where the rule puts it first.
 * Every comparison of times is uhil_diff (SPEC 3.2). */
#include <string.h>

#include "showdown.h"
#include "../uhil_algorithms.h"
#include "../uhil_framing.h"

enum timer { T_NONE, T_BEEP, T_GREEN, T_NO_PRESS, T_VERDICT, T_LANDING };

#define SIDES 2

static const struct disposition ACTED = {UHIL_DISPOSITION_ACTED, 0};
static const struct disposition REPORTED = {UHIL_DISPOSITION_REPORTED, 0};

static struct disposition refused(uint8_t error)
{
    struct disposition d;
    d.disposition = UHIL_DISPOSITION_REFUSED;
    d.error = error;
    return d;
}

/* ---- events ---- */

static void emit(struct unit *u, uint8_t type, struct uhil_msg *m)
{
    m->type = type;
    unit_event(u, m);
}

static void light(struct showdown *s, struct unit *u, uint8_t which, uint8_t mode, uint8_t target)
{
    struct uhil_msg m;
    memset(&m, 0, sizeof m);
    m.u.light.light = which;
    m.u.light.mode = mode;
    m.u.light.target = target;
    if (which == UHIL_SHOWDOWN_LIGHT_GREEN) {
        s->green_mode = mode;
    } else {
        s->red_mode = mode;
        s->red_target = target;
    }
    emit(u, UHIL_LIGHT_ID, &m);
}

static void sound(struct unit *u, uint8_t which, uint16_t arg)
{
    struct uhil_msg m;
    memset(&m, 0, sizeof m);
    m.u.sound.sound = which;
    m.u.sound.arg = arg;
    emit(u, UHIL_SOUND_ID, &m);
}

static void set_state(struct showdown *s, struct unit *u, uint8_t state)
{
    struct uhil_msg m;
    if (state == s->state)
        return;
    memset(&m, 0, sizeof m);
    m.u.state.state = state;
    m.u.state.previous = s->state;
    s->state = state;
    emit(u, UHIL_STATE_ID, &m);
}

static void cards_event(struct unit *u, uint8_t type, uint8_t cards)
{
    struct uhil_msg m;
    memset(&m, 0, sizeof m);
    if (type == UHIL_SD_CARDS_ID)
        m.u.sd_cards.cards = cards;
    else
        m.u.sd_countdown.cards = cards;
    emit(u, type, &m);
}

static void arm(struct showdown *s, uint8_t timer, uint32_t at)
{
    s->timer = timer;
    s->timer_us = at;
}

/* ---- outcomes (7.3) ---- */

static void verdict(struct showdown *s, struct unit *u, uint8_t loser, uint8_t reason, uint32_t decisive,
                    uint32_t knowable, uint8_t landed_a, uint8_t landed_b)
{
    struct uhil_msg m;
    struct uhil_sd_verdict *v = &m.u.sd_verdict;
    int side;
    s->timer = T_NONE;
    if (s->green_mode != UHIL_LIGHT_MODE_OFF)
        light(s, u, UHIL_SHOWDOWN_LIGHT_GREEN, UHIL_LIGHT_MODE_OFF, UHIL_SIDE_NONE);
    memset(&m, 0, sizeof m);
    m.type = UHIL_SD_VERDICT_ID;
    v->loser = loser;
    v->reason = reason;
    v->cards = s->in_play;
    v->landed_a = landed_a;
    v->landed_b = landed_b;
    for (side = 0; side < SIDES; side++) {
        uint32_t *press = side ? &v->press_b_us : &v->press_a_us;
        int32_t *reaction = side ? &v->reaction_b_us : &v->reaction_a_us;
        *press = s->pressed[side] ? s->press_us[side] : UHIL_NONE_U32;
        *reaction = s->pressed[side] ? uhil_diff(s->press_us[side], s->green_us) : UHIL_NONE_I32;
    }
    v->green_us = s->green_us;
    v->decisive_us = decisive;
    v->knowable_us = knowable;
    unit_verdict(u, &m);
    set_state(s, u, reason == UHIL_SHOWDOWN_REASON_NO_PRESS ? UHIL_SHOWDOWN_STATE_LOADED : UHIL_SHOWDOWN_STATE_EMPTY);
}

static void launch(struct showdown *s, struct unit *u, uint8_t toward)
{
    struct uhil_msg m;
    s->tray = 0;                        /* the cards leave the tray at the launch */
    memset(&m, 0, sizeof m);
    m.u.sd_launch.toward = toward;
    m.u.sd_launch.cards = s->in_play;
    emit(u, UHIL_SD_LAUNCH_ID, &m);
    sound(u, UHIL_SHOWDOWN_SOUND_LAUNCH, 0);      /* SD-14 */
}

/* ---- deadlines ---- */

static void beep(struct showdown *s, struct unit *u, uint32_t t)
{
    struct uhil_msg m;
    uint32_t next = t + unit_param(u, UHIL_PARAM_BEEP_INTERVAL_US);
    memset(&m, 0, sizeof m);
    m.u.sd_beep.index = s->beep_k;
    emit(u, UHIL_SD_BEEP_ID, &m);
    sound(u, UHIL_SHOWDOWN_SOUND_BEEP, s->beep_k);
    s->beep_k++;
    if (uhil_diff(next, s->green_us) < 0)
        arm(s, T_BEEP, next);
    else
        arm(s, T_GREEN, s->green_us);
}

static void green(struct showdown *s, struct unit *u, uint32_t t)
{
    struct uhil_msg m;
    light(s, u, UHIL_SHOWDOWN_LIGHT_RED, UHIL_LIGHT_MODE_OFF, UHIL_SIDE_NONE);
    light(s, u, UHIL_SHOWDOWN_LIGHT_GREEN, UHIL_LIGHT_MODE_FLASH, UHIL_SIDE_NONE);
    sound(u, UHIL_SHOWDOWN_SOUND_GO, 0);
    memset(&m, 0, sizeof m);
    emit(u, UHIL_SD_GREEN_ID, &m);
    set_state(s, u, UHIL_SHOWDOWN_STATE_GO);
    arm(s, T_NO_PRESS, t + unit_param(u, UHIL_PARAM_GO_TIMEOUT_US));
}

static void first_press_verdict(struct showdown *s, struct unit *u, uint32_t t)
{
    verdict(s, u, (uint8_t)(1 - s->first), UHIL_SHOWDOWN_REASON_FIRST_PRESS, s->press_us[s->first], t,
            UHIL_NONE_U8, UHIL_NONE_U8);
}

static void landing(struct showdown *s, struct unit *u, uint32_t t)
{
    uint32_t w = unit_param(u, UHIL_PARAM_TIE_WINDOW_US);
    int32_t d = uhil_diff(s->press_us[UHIL_SIDE_B], s->press_us[UHIL_SIDE_A]);
    uint8_t on_a = 0, on_b = 0, k;
    /* the line model's draws are made with or without a sensor (SD-11): one random sequence for both */
    for (k = 0; k < s->in_play; k++) {
        if (uhil_lands_on_b(unit_rng(u), d, w))
            on_b++;
        else
            on_a++;
    }
    /* decisive: the second press, the later of the two */
    {
        uint32_t second = uhil_diff(s->press_us[UHIL_SIDE_B], s->press_us[UHIL_SIDE_A]) >= 0 ?
            s->press_us[UHIL_SIDE_B] : s->press_us[UHIL_SIDE_A];
        if (!s->landing_sensor) {
            verdict(s, u, UHIL_SIDE_NONE, UHIL_SHOWDOWN_REASON_LINE_TIEBREAK, second, t, UHIL_NONE_U8, UHIL_NONE_U8);
            return;
        }
        {
            struct uhil_msg m;
            memset(&m, 0, sizeof m);
            m.u.sd_landing.landed_a = on_a;
            m.u.sd_landing.landed_b = on_b;
            emit(u, UHIL_SD_LANDING_ID, &m);
        }
        if (on_a == on_b)
            verdict(s, u, UHIL_SIDE_NONE, UHIL_SHOWDOWN_REASON_EVEN_SPLIT, second, t, on_a, on_b);
        else
            verdict(s, u, on_a > on_b ? UHIL_SIDE_A : UHIL_SIDE_B, UHIL_SHOWDOWN_REASON_LINE_TIEBREAK, second, t,
                    on_a, on_b);
    }
}

static void run_deadline(void *game, struct unit *u, uint32_t at)
{
    struct showdown *s = game;
    uint8_t timer = s->timer;
    s->timer = T_NONE;
    switch (timer) {
    case T_BEEP: beep(s, u, at); break;
    case T_GREEN: green(s, u, at); break;
    case T_NO_PRESS:
        verdict(s, u, UHIL_SIDE_NONE, UHIL_SHOWDOWN_REASON_NO_PRESS, at, at, UHIL_NONE_U8, UHIL_NONE_U8);
        break;
    case T_VERDICT: first_press_verdict(s, u, at); break;
    case T_LANDING: landing(s, u, at); break;
    default: break;
    }
}

static int deadline(const void *game, uint32_t *at)
{
    const struct showdown *s = game;
    *at = s->timer_us;
    return s->timer != T_NONE;
}

/* Run a deadline at or before t that the rules put before an input at t (the half-open windows). */
static void run_now(struct showdown *s, struct unit *u, uint32_t at)
{
    uint32_t stamp = unit_stamp(u, at);
    run_deadline(s, u, at);
    unit_stamp(u, stamp);
}

static void catch_up(struct showdown *s, struct unit *u, uint32_t t)
{
    uint32_t go_end;
    if (s->state == UHIL_SHOWDOWN_STATE_COUNTDOWN && uhil_diff(t, s->green_us) >= 0) {
        arm(s, T_GREEN, s->green_us);           /* SD-2: green at G comes before a press at G */
        run_now(s, u, s->green_us);
    }
    go_end = s->green_us + unit_param(u, UHIL_PARAM_GO_TIMEOUT_US);
    if (s->state == UHIL_SHOWDOWN_STATE_GO && uhil_diff(t, go_end) >= 0) {
        arm(s, T_NO_PRESS, go_end);             /* SD-8: the no-press verdict comes before a press at G + T */
        run_now(s, u, go_end);
    }
    if (s->state == UHIL_SHOWDOWN_STATE_RACING) {
        uint32_t t1 = s->press_us[s->first];
        uint32_t window_end = t1 + unit_param(u, UHIL_PARAM_TIE_WINDOW_US);
        uint32_t landing_at = t1 + unit_param(u, UHIL_PARAM_FLIGHT_US);
        if (!s->tie && uhil_diff(t, window_end) > 0) {    /* SD-5: a press at exactly t1 + W is still recorded */
            arm(s, T_VERDICT, window_end);
            run_now(s, u, window_end);
        } else if (s->tie && uhil_diff(t, landing_at) >= 0) {
            arm(s, T_LANDING, landing_at);
            run_now(s, u, landing_at);
        }
    }
}

/* ---- inputs ---- */

static void countdown(struct showdown *s, struct unit *u, uint32_t t)
{
    s->in_play = s->tray;
    s->green_us = t + uhil_countdown_us(unit_rng(u), unit_param(u, UHIL_PARAM_COUNTDOWN_MIN_US),
                                        unit_param(u, UHIL_PARAM_COUNTDOWN_MAX_US));      /* SD-1 */
    s->first = UHIL_SIDE_NONE;
    s->pressed[0] = s->pressed[1] = 0;
    s->tie = 0;
    cards_event(u, UHIL_SD_COUNTDOWN_ID, s->in_play);
    light(s, u, UHIL_SHOWDOWN_LIGHT_RED, UHIL_LIGHT_MODE_FLASH, UHIL_SIDE_NONE);
    s->beep_k = 0;
    beep(s, u, t);
    set_state(s, u, UHIL_SHOWDOWN_STATE_COUNTDOWN);
}

static struct disposition load(struct showdown *s, struct unit *u, uint8_t action, uint8_t value)
{
    int tray;
    if (s->state != UHIL_SHOWDOWN_STATE_EMPTY && s->state != UHIL_SHOWDOWN_STATE_LOADED)
        return refused(UHIL_ERROR_WRONG_STATE);
    tray = action == UHIL_ACTION_PRESS ? s->tray + value : s->tray - value;
    if (value == 0 || tray < 0 || tray > SHOWDOWN_CAPACITY)                           /* SD-10 */
        return refused(UHIL_ERROR_BAD_VALUE);
    s->tray = (uint8_t)tray;
    cards_event(u, UHIL_SD_CARDS_ID, s->tray);
    set_state(s, u, s->tray ? UHIL_SHOWDOWN_STATE_LOADED : UHIL_SHOWDOWN_STATE_EMPTY);
    return ACTED;
}

static struct disposition paddle(struct showdown *s, struct unit *u, uint32_t t, uint8_t side)
{
    if (s->state == UHIL_SHOWDOWN_STATE_COUNTDOWN) {       /* false start (SD-3) */
        s->timer = T_NONE;
        s->pressed[side] = 1;
        s->press_us[side] = t;
        light(s, u, UHIL_SHOWDOWN_LIGHT_RED, UHIL_LIGHT_MODE_ON, side);
        sound(u, UHIL_SHOWDOWN_SOUND_FALSE_START, 0);
        launch(s, u, side);                 /* capability false_start_launch (SD-3) */
        verdict(s, u, side, UHIL_SHOWDOWN_REASON_FALSE_START, t, t, UHIL_NONE_U8, UHIL_NONE_U8);
        return ACTED;
    }
    if (s->state == UHIL_SHOWDOWN_STATE_GO) {
        s->first = side;
        s->pressed[side] = 1;
        s->press_us[side] = t;
        launch(s, u, (uint8_t)(1 - side));
        set_state(s, u, UHIL_SHOWDOWN_STATE_RACING);
        arm(s, T_VERDICT, t + unit_param(u, UHIL_PARAM_TIE_WINDOW_US));
        return ACTED;
    }
    if (s->state == UHIL_SHOWDOWN_STATE_RACING && !s->pressed[side]) {
        uint32_t t1 = s->press_us[s->first];
        s->pressed[side] = 1;
        s->press_us[side] = t;
        if ((uint32_t)uhil_diff(t, t1) < unit_param(u, UHIL_PARAM_TIE_WINDOW_US)) {   /* SD-5, SD-13 */
            s->tie = 1;
            arm(s, T_LANDING, t1 + unit_param(u, UHIL_PARAM_FLIGHT_US));
            return ACTED;
        }
    }
    return REPORTED;                    /* SD-4, SD-12: reported, nothing else */
}

static struct disposition on_input(void *game, struct unit *u, uint32_t t, uint8_t input, uint8_t action,
                                   uint8_t value)
{
    struct showdown *s = game;
    if (input == UHIL_SHOWDOWN_INPUT_LOAD_CARDS)
        return load(s, u, action, value);
    if (action != UHIL_ACTION_PRESS)
        return REPORTED;                /* SD-9 */
    catch_up(s, u, t);
    if (input == UHIL_SHOWDOWN_INPUT_TIMER) {
        if (s->state == UHIL_SHOWDOWN_STATE_EMPTY)
            return refused(UHIL_ERROR_WRONG_STATE);
        if (s->state == UHIL_SHOWDOWN_STATE_LOADED) {
            countdown(s, u, t);
            return ACTED;
        }
        return REPORTED;
    }
    return paddle(s, u, t, input);
}

/* ---- life cycle ---- */

static void power_on(void *game, struct unit *u)
{
    struct showdown *s = game;
    uint8_t sensor = s->landing_sensor;
    (void)u;
    memset(s, 0, sizeof *s);
    s->landing_sensor = sensor;
    s->state = UHIL_SHOWDOWN_STATE_EMPTY;
    s->first = UHIL_SIDE_NONE;
}

static void shutdown(void *game, struct unit *u)
{
    struct showdown *s = game;
    if (s->tray)
        cards_event(u, UHIL_SD_CARDS_ID, 0);                /* SD-15 */
    if (s->green_mode != UHIL_LIGHT_MODE_OFF)               /* lights off in light id order (PR-5) */
        light(s, u, UHIL_SHOWDOWN_LIGHT_GREEN, UHIL_LIGHT_MODE_OFF, UHIL_SIDE_NONE);
    if (s->red_mode != UHIL_LIGHT_MODE_OFF)
        light(s, u, UHIL_SHOWDOWN_LIGHT_RED, UHIL_LIGHT_MODE_OFF, s->red_target);
    s->timer = T_NONE;
}

static uint8_t state(const void *game) { return ((const struct showdown *)game)->state; }
static uint8_t cards(const void *game) { return ((const struct showdown *)game)->tray; }

static int idle(const void *game)
{
    uint8_t st = state(game);
    return st == UHIL_SHOWDOWN_STATE_EMPTY || st == UHIL_SHOWDOWN_STATE_LOADED;
}

static int config_ok(const struct unit *u, uint8_t param, uint32_t value)
{
    /* SPEC 4.7's rules on the values that would result */
    uint32_t lo = param == UHIL_PARAM_COUNTDOWN_MIN_US ? value : unit_param(u, UHIL_PARAM_COUNTDOWN_MIN_US);
    uint32_t hi = param == UHIL_PARAM_COUNTDOWN_MAX_US ? value : unit_param(u, UHIL_PARAM_COUNTDOWN_MAX_US);
    uint32_t w = param == UHIL_PARAM_TIE_WINDOW_US ? value : unit_param(u, UHIL_PARAM_TIE_WINDOW_US);
    uint32_t f = param == UHIL_PARAM_FLIGHT_US ? value : unit_param(u, UHIL_PARAM_FLIGHT_US);
    return lo <= hi && w < f;
}

/* it throws the cards at a false starter (SD-3), and says so */
#define SHOWDOWN_CAPS (UHIL_CAP_TEST_MODE | UHIL_CAP_HOST_INPUT | UHIL_CAP_TIME_SYNC | UHIL_CAP_EVENT_RESEND | \
                       UHIL_CAP_CONFIG_SET | UHIL_CAP_REFERENCE_RNG | UHIL_CAP_FALSE_START_LAUNCH)

const struct game_ops showdown_ops = {
    UHIL_UNIT_KIND_SHOWDOWN, 4, 1u << UHIL_SHOWDOWN_INPUT_LOAD_CARDS, SHOWDOWN_CAPS | UHIL_CAP_LANDING_SENSOR,
    SHOWDOWN_CAPACITY, 2,
    power_on, shutdown, on_input, deadline, run_deadline, state, cards, idle, config_ok
};

const struct game_ops showdown_ops_no_sensor = {
    UHIL_UNIT_KIND_SHOWDOWN, 4, 1u << UHIL_SHOWDOWN_INPUT_LOAD_CARDS, SHOWDOWN_CAPS,
    SHOWDOWN_CAPACITY, 2,
    power_on, shutdown, on_input, deadline, run_deadline, state, cards, idle, config_ok
};
