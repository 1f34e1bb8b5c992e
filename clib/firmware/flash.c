/* The Flash base (SPEC 8). Three deadlines may be pending at once: the game timer (the turn timer or
 * the buzzer window), the reset hold and the inactivity period; every one comes before an input at
 * the same instant (FL-14), so on_input first runs the deadlines due at or before the edge. Game time
 * (FL-15) is device time minus the time spent paused or asleep: a frozen game timer keeps its time
 * left and runs on from the press that unfreezes it. The speed and power switches and the held
 * buttons are physical: RESET new_game keeps them (FL-17). */
#include <string.h>

#include "flash.h"
#include "../uhil_algorithms.h"
#include "../uhil_framing.h"

/* The longest a deadline is put ahead of the time it is armed: uhil_diff orders two times only when
 * they are less than 2^31 us apart, and sleep_after_us may be up to 3.6e9 us. A longer inactivity
 * period is waited in steps of this (FL-11 with SPEC 3.2). */
#define WAIT_STEP 0x40000000u

enum deadline { D_NONE, D_GAME, D_HOLD, D_SLEEP };

#define BIT(i) (1u << (i))
#define HOLD_BUTTONS (BIT(UHIL_FLASH_INPUT_PLAY_PAUSE) | BIT(UHIL_FLASH_INPUT_BUZZER))

static uint32_t turn_time(const struct flash *f, uint8_t speed)
{
    if (speed == UHIL_FLASH_SPEED_FOUR_SECONDS)
        return unit_param(f->unit, UHIL_PARAM_TURN_SHORT_US);
    if (speed == UHIL_FLASH_SPEED_SIX_SECONDS)
        return unit_param(f->unit, UHIL_PARAM_TURN_LONG_US);
    return 0;                                                  /* unlimited */
}

static uint32_t game_time(const struct flash *f, uint32_t t)
{
    return t - f->frozen_total;
}

static void arm(struct flash *f, struct flash_timer *timer, uint32_t at)
{
    timer->armed = 1;
    timer->at = at;
    timer->order = f->orders++;
}

/* ---- events ---- */

static void light(struct flash *f, struct unit *u, uint8_t button, uint8_t mode)
{
    f->lights[button] = mode;
    unit_light(u, UHIL_FLASH_LIGHT_PLAYER, mode, button);
}

/* every lit light off in button order (PR-5, FL-16, FL-18), but `keep`; `forget` clears what the
 * game shows too (sleep only darkens it) */
static void lights_off(struct flash *f, struct unit *u, int keep, int forget)
{
    uint8_t i;
    for (i = 0; i < FLASH_BUTTONS; i++) {
        if (f->lights[i] == UHIL_LIGHT_MODE_OFF || i == keep)
            continue;
        if (f->state != UHIL_FLASH_STATE_ASLEEP)           /* asleep, they are dark already */
            unit_light(u, UHIL_FLASH_LIGHT_PLAYER, UHIL_LIGHT_MODE_OFF, i);
        if (forget)
            f->lights[i] = UHIL_LIGHT_MODE_OFF;
    }
}

static void opponent_lights(struct flash *f, struct unit *u, uint8_t mode)
{
    uint8_t i;
    for (i = 0; i < FLASH_BUTTONS; i++)
        if (f->opponents & BIT(i))
            light(f, u, i, mode);
}

static void penalty(struct unit *u, uint8_t player, uint8_t reason)
{
    struct uhil_msg m;
    memset(&m, 0, sizeof m);
    m.u.fl_penalty.player = player;
    m.u.fl_penalty.cards = 2;
    m.u.fl_penalty.reason = reason;
    unit_emit(u, UHIL_FL_PENALTY_ID, &m);
}

static void turn_end(struct flash *f, struct unit *u, uint32_t t)
{
    struct uhil_msg m;
    memset(&m, 0, sizeof m);
    m.u.fl_turn_end.player = f->current;
    m.u.fl_turn_end.turn = f->turn;
    m.u.fl_turn_end.elapsed_us = game_time(f, t) - f->turn_start_g;    /* FL-10, FL-15 */
    unit_emit(u, UHIL_FL_TURN_END_ID, &m);
    light(f, u, f->current, UHIL_LIGHT_MODE_OFF);
}

/* the remaining time of the game timer: frozen, running, or none (0) */
static uint32_t remaining(const struct flash *f, uint32_t t)
{
    if (!f->game_timer.armed)
        return 0;
    return f->frozen ? f->game_remaining : f->game_timer.at - t;
}

static void pause_event(struct unit *u, uint8_t paused, uint32_t left)
{
    struct uhil_msg m;
    memset(&m, 0, sizeof m);
    m.u.fl_pause.paused = paused;
    m.u.fl_pause.remaining_us = left;
    unit_emit(u, UHIL_FL_PAUSE_ID, &m);
}

static void sleep_event(struct unit *u, uint8_t asleep)
{
    struct uhil_msg m;
    memset(&m, 0, sizeof m);
    m.u.fl_sleep.asleep = asleep;
    unit_emit(u, UHIL_FL_SLEEP_ID, &m);
}

/* ---- the game ---- */

/* draw the player (6.3) and start their turn at t with the switch's current turn time (8.2) */
static void selection(struct flash *f, struct unit *u, uint32_t t, uint8_t reason)
{
    struct uhil_msg m;
    uint32_t pick = uhil_pick(unit_rng(u), f->count), tt = turn_time(f, f->speed);
    uint8_t i;
    for (i = 0; i < FLASH_BUTTONS; i++) {                     /* the pick-th registered button */
        if ((f->registered & BIT(i)) && pick-- == 0)
            break;
    }
    f->current = i;
    f->turn++;
    memset(&m, 0, sizeof m);
    m.u.fl_selected.player = i;
    m.u.fl_selected.turn = f->turn;
    m.u.fl_selected.turn_time_us = tt;
    m.u.fl_selected.reason = reason;
    unit_emit(u, UHIL_FL_SELECTED_ID, &m);
    light(f, u, i, UHIL_LIGHT_MODE_ON);
    unit_sound(u, UHIL_FLASH_SOUND_SELECT, 0);
    unit_change_state(u, &f->state, UHIL_FLASH_STATE_TURN);
    f->turn_start_g = game_time(f, t);
    f->game_timer.armed = 0;
    if (tt)
        arm(f, &f->game_timer, t + tt);
}

static void timeout(struct flash *f, struct unit *u)
{
    struct uhil_msg m;
    unit_sound(u, UHIL_FLASH_SOUND_TIMEOUT, 0);
    memset(&m, 0, sizeof m);
    m.u.fl_timeout.player = f->current;
    m.u.fl_timeout.turn = f->turn;
    unit_emit(u, UHIL_FL_TIMEOUT_ID, &m);
    penalty(u, f->current, UHIL_FLASH_PENALTY_REASON_TIMEOUT);
    light(f, u, f->current, UHIL_LIGHT_MODE_FLASH);
    f->flag_reason = UHIL_FLASH_SELECT_REASON_AFTER_TIMEOUT;
    unit_change_state(u, &f->state, UHIL_FLASH_STATE_FLAGGED);
}

static void buzzer(struct flash *f, struct unit *u, uint32_t t)
{
    struct uhil_msg m;
    f->opponents = (uint8_t)(f->registered & ~BIT(f->current));      /* FL-6 */
    f->answered = 0;
    f->buzzer_us = t;
    f->buzzer_g = game_time(f, t);
    memset(&m, 0, sizeof m);
    m.u.fl_buzzer.player = f->current;
    m.u.fl_buzzer.opponents_mask = f->opponents;
    unit_emit(u, UHIL_FL_BUZZER_ID, &m);
    unit_sound(u, UHIL_FLASH_SOUND_BUZZER, 0);
    opponent_lights(f, u, UHIL_LIGHT_MODE_FLASH);
    unit_change_state(u, &f->state, UHIL_FLASH_STATE_BUZZER);
    arm(f, &f->game_timer, t + unit_param(u, UHIL_PARAM_BUZZER_WINDOW_US));   /* the turn timer is discarded */
}

/* the buzzer verdict (8.2) at `at`: the last opponent's press, or the window's end */
static void verdict(struct flash *f, struct unit *u, uint32_t at)
{
    struct uhil_msg m;
    struct uhil_fl_buzzer_verdict *v = &m.u.fl_buzzer_verdict;
    uint8_t i, missing = (uint8_t)(f->opponents & ~f->answered), slowest = 0, n = 0;
    memset(&m, 0, sizeof m);
    m.type = UHIL_FL_BUZZER_VERDICT_ID;
    if (missing) {                                             /* FL-9 */
        v->reason = UHIL_FLASH_BUZZER_REASON_NON_PRESSER;
        v->tied_mask = missing;
        while (!(missing & BIT(slowest)))
            slowest++;
    } else {                                                   /* FL-8, on reaction times (FL-15) */
        while (!(f->opponents & BIT(slowest)))
            slowest++;
        for (i = slowest; i < FLASH_BUTTONS; i++)              /* the latest; the lowest index on equal times */
            if ((f->opponents & BIT(i)) && f->reaction[i] > f->reaction[slowest])
                slowest = i;
        for (i = 0; i < FLASH_BUTTONS; i++) {
            if ((f->opponents & BIT(i)) &&
                (uint32_t)(f->reaction[slowest] - f->reaction[i]) < unit_param(u, UHIL_PARAM_BUZZER_TIE_US)) {
                v->tied_mask = (uint8_t)(v->tied_mask | BIT(i));
                n++;
            }
        }
        v->reason = n > 1 ? UHIL_FLASH_BUZZER_REASON_SLOWEST_TIE : UHIL_FLASH_BUZZER_REASON_SLOWEST;
    }
    v->slowest = slowest;
    v->buzzer_us = f->buzzer_us;
    v->decisive_us = at;
    v->knowable_us = at;
    for (i = 0; i < FLASH_BUTTONS; i++)
        v->reaction_us[i] = (f->answered & BIT(i)) ? f->reaction[i] : UHIL_NONE_I32;
    f->game_timer.armed = 0;
    unit_verdict(u, &m);
    penalty(u, slowest, UHIL_FLASH_PENALTY_REASON_BUZZER_SLOWEST);
    lights_off(f, u, slowest, 1);                              /* FL-16 */
    light(f, u, slowest, UHIL_LIGHT_MODE_FLASH);
    unit_sound(u, UHIL_FLASH_SOUND_SLOWEST, 0);
    f->current = slowest;
    f->flag_reason = UHIL_FLASH_SELECT_REASON_AFTER_FLAG;
    unit_change_state(u, &f->state, UHIL_FLASH_STATE_FLAGGED);
}

static void cancel(struct flash *f, struct unit *u, uint32_t t)
{
    struct uhil_msg m;
    uint8_t i;
    memset(&m, 0, sizeof m);
    m.u.fl_buzzer_cancel.player = f->current;
    unit_emit(u, UHIL_FL_BUZZER_CANCEL_ID, &m);
    unit_sound(u, UHIL_FLASH_SOUND_CANCEL, 0);
    for (i = 0; i < FLASH_BUTTONS; i++)                       /* each opponent whose light is lit */
        if ((f->opponents & BIT(i)) && f->lights[i] != UHIL_LIGHT_MODE_OFF)
            light(f, u, i, UHIL_LIGHT_MODE_OFF);
    f->game_timer.armed = 0;
    turn_end(f, u, t);                                         /* FL-15: from the turn's start */
    selection(f, u, t, UHIL_FLASH_SELECT_REASON_AFTER_CANCEL);
}

/* ---- pause and sleep (FL-10, FL-11) ---- */

static void freeze(struct flash *f, uint32_t t)
{
    if (f->frozen)
        return;
    f->game_remaining = remaining(f, t);
    f->frozen = 1;
    f->frozen_since = t;
}

static void unfreeze(struct flash *f, uint32_t t)
{
    if (!f->frozen)
        return;
    f->frozen = 0;
    f->frozen_total += t - f->frozen_since;
    if (f->game_timer.armed)
        f->game_timer.at = t + f->game_remaining;
}

static void pause(struct flash *f, struct unit *u, uint32_t t)
{
    freeze(f, t);
    f->paused_from = f->state;
    pause_event(u, 1, remaining(f, t));
    unit_sound(u, UHIL_FLASH_SOUND_PAUSE, 0);
    unit_change_state(u, &f->state, UHIL_FLASH_STATE_PAUSED);
}

static void resume(struct flash *f, struct unit *u, uint32_t t)
{
    pause_event(u, 0, remaining(f, t));
    unit_sound(u, UHIL_FLASH_SOUND_RESUME, 0);
    unfreeze(f, t);
    unit_change_state(u, &f->state, f->paused_from);
    f->paused_from = UHIL_FLASH_STATE_OFF;
}

static void fall_asleep(struct flash *f, struct unit *u, uint32_t at)
{
    freeze(f, at);
    f->slept_in = f->state;
    sleep_event(u, 1);
    unit_sound(u, UHIL_FLASH_SOUND_SLEEP, 0);
    lights_off(f, u, -1, 0);                                   /* FL-18: dark, not forgotten */
    unit_change_state(u, &f->state, UHIL_FLASH_STATE_ASLEEP);
}

static void wake(struct flash *f, struct unit *u, uint32_t t)
{
    uint8_t i, back = f->slept_in;
    sleep_event(u, 0);
    unit_sound(u, UHIL_FLASH_SOUND_WAKE, 0);
    for (i = 0; i < FLASH_BUTTONS; i++)
        if (f->lights[i] != UHIL_LIGHT_MODE_OFF)
            unit_light(u, UHIL_FLASH_LIGHT_PLAYER, f->lights[i], i);
    if (back == UHIL_FLASH_STATE_PAUSED) {                   /* the same press ends the pause */
        pause_event(u, 0, remaining(f, t));
        back = f->paused_from;
        f->paused_from = UHIL_FLASH_STATE_OFF;
    }
    unfreeze(f, t);
    unit_change_state(u, &f->state, back);
}

/* registrations, the game, its timers and lights cleared; the switches and held buttons stay */
static void clear_game(struct flash *f, struct unit *u)
{
    lights_off(f, u, -1, 1);
    f->registered = f->count = 0;
    f->turn = 0;
    f->game_timer.armed = 0;
    f->hold.armed = 0;
    f->frozen = 0;
    f->paused_from = UHIL_FLASH_STATE_OFF;
}

static void restart_period(struct flash *f, uint32_t t)
{
    f->last_edge = t;
    f->sleep_waited = 0;
    f->sleep_order = f->orders++;
}

static void reset(struct flash *f, struct unit *u, uint32_t at)        /* FL-12, FL-19 */
{
    struct uhil_msg m;
    uint8_t previous = f->state;
    memset(&m, 0, sizeof m);
    m.u.fl_reset.held_us = unit_param(u, UHIL_PARAM_RESET_HOLD_US);
    unit_emit(u, UHIL_FL_RESET_ID, &m);
    unit_sound(u, UHIL_FLASH_SOUND_RESET, 0);
    clear_game(f, u);
    f->state = UHIL_FLASH_STATE_SETUP;
    unit_state(u, UHIL_FLASH_STATE_SETUP, previous);          /* even when it was in setup */
    restart_period(f, at);
}

/* ---- deadlines ---- */

static int sleep_runs(const struct flash *f)
{
    return f->state != UHIL_FLASH_STATE_OFF && f->state != UHIL_FLASH_STATE_ASLEEP;
}

/* the inactivity deadline, or the next step towards it; 1 when it is the period's end itself */
static int sleep_at(const struct flash *f, uint32_t *at)
{
    uint32_t period = unit_param(f->unit, UHIL_PARAM_SLEEP_AFTER_US);
    if (period > f->sleep_waited && period - f->sleep_waited > WAIT_STEP) {
        *at = f->last_edge + f->sleep_waited + WAIT_STEP;
        return 0;
    }
    *at = f->last_edge + period;
    return 1;
}

static int earlier(uint32_t at, uint32_t order, uint32_t best_at, uint32_t best_order)
{
    int32_t d = uhil_diff(at, best_at);
    return d < 0 || (d == 0 && order < best_order);
}

static enum deadline next(const struct flash *f, uint32_t *at)
{
    enum deadline which = D_NONE;
    uint32_t order = 0, t;
    if (f->game_timer.armed && !f->frozen) {
        which = D_GAME;
        *at = f->game_timer.at;
        order = f->game_timer.order;
    }
    if (f->hold.armed && (which == D_NONE || earlier(f->hold.at, f->hold.order, *at, order))) {
        which = D_HOLD;
        *at = f->hold.at;
        order = f->hold.order;
    }
    if (sleep_runs(f)) {
        sleep_at(f, &t);
        if (which == D_NONE || earlier(t, f->sleep_order, *at, order)) {
            which = D_SLEEP;
            *at = t;
        }
    }
    return which;
}

static int deadline(const void *game, uint32_t *at)
{
    return next(game, at) != D_NONE;
}

static void run_deadline(void *game, struct unit *u, uint32_t at)
{
    struct flash *f = game;
    uint32_t due;
    switch (next(f, &due)) {
    case D_GAME:
        f->game_timer.armed = 0;
        if (f->state == UHIL_FLASH_STATE_TURN)
            timeout(f, u);
        else
            verdict(f, u, at);                                 /* the window's end, opponents missing */
        break;
    case D_HOLD:
        f->hold.armed = 0;
        reset(f, u, at);
        break;
    case D_SLEEP:
        if (sleep_at(f, &due))
            fall_asleep(f, u, at);
        else
            f->sleep_waited += WAIT_STEP;
        break;
    default:
        break;
    }
}

/* ---- inputs ---- */

static struct disposition player(struct flash *f, struct unit *u, uint32_t t, uint8_t i)
{
    struct uhil_msg m;
    switch (f->state) {
    case UHIL_FLASH_STATE_SETUP:
        if (f->registered & BIT(i))
            return UNIT_REPORTED;
        f->registered = (uint8_t)(f->registered | BIT(i));
        f->count++;
        memset(&m, 0, sizeof m);
        m.u.fl_registered.player = i;
        m.u.fl_registered.count = f->count;
        unit_emit(u, UHIL_FL_REGISTERED_ID, &m);
        unit_sound(u, UHIL_FLASH_SOUND_REGISTERED, 0);
        return UNIT_ACTED;
    case UHIL_FLASH_STATE_TURN:
        if (i != f->current)
            return UNIT_REPORTED;
        turn_end(f, u, t);                                     /* in time: the timer row ran first if due */
        selection(f, u, t, UHIL_FLASH_SELECT_REASON_NEXT);
        return UNIT_ACTED;
    case UHIL_FLASH_STATE_BUZZER:
        if ((f->opponents & BIT(i)) && !(f->answered & BIT(i))) {
            f->answered = (uint8_t)(f->answered | BIT(i));
            f->reaction[i] = (int32_t)(game_time(f, t) - f->buzzer_g);
            if (f->answered == f->opponents)
                verdict(f, u, t);
            return UNIT_ACTED;
        }
        if (i == f->current && !f->answered) {                 /* FL-7 */
            cancel(f, u, t);
            return UNIT_ACTED;
        }
        return UNIT_REPORTED;
    case UHIL_FLASH_STATE_FLAGGED:
        if (i != f->current)
            return UNIT_REPORTED;
        light(f, u, i, UHIL_LIGHT_MODE_OFF);                   /* FL-2 */
        selection(f, u, t, f->flag_reason);
        return UNIT_ACTED;
    default:
        return UNIT_REPORTED;
    }
}

static struct disposition play_pause(struct flash *f, struct unit *u, uint32_t t)
{
    struct uhil_msg m;
    switch (f->state) {
    case UHIL_FLASH_STATE_SETUP:
        if (f->count < 2)
            return unit_refused(UHIL_ERROR_WRONG_STATE);
        memset(&m, 0, sizeof m);
        m.u.fl_game_start.players_mask = f->registered;
        m.u.fl_game_start.count = f->count;
        unit_emit(u, UHIL_FL_GAME_START_ID, &m);
        unit_sound(u, UHIL_FLASH_SOUND_START, 0);
        f->turn = 0;
        selection(f, u, t, UHIL_FLASH_SELECT_REASON_START);
        return UNIT_ACTED;
    case UHIL_FLASH_STATE_TURN:
    case UHIL_FLASH_STATE_BUZZER:
    case UHIL_FLASH_STATE_FLAGGED:
        pause(f, u, t);
        return UNIT_ACTED;
    case UHIL_FLASH_STATE_PAUSED:
        resume(f, u, t);
        return UNIT_ACTED;
    case UHIL_FLASH_STATE_ASLEEP:
        wake(f, u, t);
        return UNIT_ACTED;
    default:
        return UNIT_REPORTED;
    }
}

static struct disposition power(struct flash *f, struct unit *u, uint8_t action)
{
    uint8_t on = action == UHIL_ACTION_PRESS;
    if (on == f->on)
        return UNIT_REPORTED;                                       /* FL-17 */
    f->on = on;
    if (on) {
        unit_change_state(u, &f->state, UHIL_FLASH_STATE_SETUP);
    } else {
        clear_game(f, u);                                      /* FL-13 */
        unit_change_state(u, &f->state, UHIL_FLASH_STATE_OFF);
    }
    return UNIT_ACTED;
}

static struct disposition speed(struct flash *f, struct unit *u, uint8_t action, uint8_t value)
{
    struct uhil_msg m;
    if (action != UHIL_ACTION_PRESS)
        return UNIT_REPORTED;
    f->speed = value;                                          /* FL-4: from the next turn */
    memset(&m, 0, sizeof m);
    m.u.fl_speed.speed = value;
    m.u.fl_speed.turn_time_us = turn_time(f, value);
    unit_emit(u, UHIL_FL_SPEED_ID, &m);
    return UNIT_ACTED;
}

/* PLAY/PAUSE and BUZZER held together start the reset hold; releasing either cancels it (FL-12) */
static void track_hold(struct flash *f, struct unit *u, uint32_t t, uint8_t input, uint8_t action)
{
    if (action == UHIL_ACTION_RELEASE) {
        f->held = (uint16_t)(f->held & ~BIT(input));
        if (BIT(input) & HOLD_BUTTONS)
            f->hold.armed = 0;
        return;
    }
    f->held = (uint16_t)(f->held | BIT(input));
    if ((BIT(input) & HOLD_BUTTONS) && (f->held & HOLD_BUTTONS) == HOLD_BUTTONS && f->on && !f->hold.armed)
        arm(f, &f->hold, t + unit_param(u, UHIL_PARAM_RESET_HOLD_US));
}

static struct disposition on_input(void *game, struct unit *u, uint32_t t, uint8_t input, uint8_t action,
                                   uint8_t value)
{
    struct flash *f = game;
    unit_deadlines_until(u, t);                               /* FL-14 */
    if ((input < FLASH_BUTTONS && input >= u->ops->players) ||
        (input == UHIL_FLASH_INPUT_SPEED_SWITCH && value > UHIL_FLASH_SPEED_FOUR_SECONDS))
        return unit_refused(UHIL_ERROR_BAD_VALUE);                  /* 8.1; no activity (FL-18) */
    restart_period(f, t);                                      /* FL-11: any other edge is activity */
    track_hold(f, u, t, input, action);
    if (input == UHIL_FLASH_INPUT_POWER)
        return power(f, u, action);
    if (input == UHIL_FLASH_INPUT_SPEED_SWITCH)
        return speed(f, u, action, value);
    if (action != UHIL_ACTION_PRESS || f->state == UHIL_FLASH_STATE_OFF)
        return UNIT_REPORTED;
    if (input == UHIL_FLASH_INPUT_PLAY_PAUSE)
        return play_pause(f, u, t);
    if (input == UHIL_FLASH_INPUT_BUZZER) {
        if (f->state != UHIL_FLASH_STATE_TURN)
            return UNIT_REPORTED;                                   /* FL-6 */
        buzzer(f, u, t);
        return UNIT_ACTED;
    }
    if (f->state == UHIL_FLASH_STATE_PAUSED || f->state == UHIL_FLASH_STATE_ASLEEP)
        return UNIT_REPORTED;
    return player(f, u, t, input);
}

/* ---- life cycle ---- */

static void power_on(void *game, struct unit *u)
{
    struct flash *f = game;
    memset(f, 0, sizeof *f);                                  /* FL-17: on, at unlimited, nothing held */
    f->unit = u;
    f->on = 1;
    f->state = UHIL_FLASH_STATE_SETUP;
}

static void shutdown(void *game, struct unit *u)
{
    struct flash *f = game;
    clear_game(f, u);
    f->state = f->on ? UHIL_FLASH_STATE_SETUP : UHIL_FLASH_STATE_OFF;
    restart_period(f, u->stamp);
}

static uint8_t state(const void *game) { return ((const struct flash *)game)->state; }
static uint8_t cards(const void *game) { (void)game; return 0; }

static int idle(const void *game)
{
    uint8_t st = state(game);
    return st == UHIL_FLASH_STATE_OFF || st == UHIL_FLASH_STATE_SETUP;
}

static int config_ok(const struct unit *u, uint8_t param, uint32_t value)
{
    (void)u; (void)param; (void)value;                       /* the Flash has no cross-parameter rule */
    return 1;
}

static const uint8_t pins[] = {
    UHIL_FLASH_INPUT_PLAYER_0, UHIL_FLASH_INPUT_PLAYER_1, UHIL_FLASH_INPUT_PLAYER_2, UHIL_FLASH_INPUT_PLAYER_3,
    UHIL_FLASH_INPUT_PLAYER_4, UHIL_FLASH_INPUT_PLAYER_5, UHIL_FLASH_INPUT_PLAYER_6, UHIL_FLASH_INPUT_PLAYER_7,
    UHIL_FLASH_INPUT_PLAY_PAUSE, UHIL_FLASH_INPUT_BUZZER
};

const struct game_ops flash_ops = {
    UHIL_UNIT_KIND_FLASH, 12, 1u << UHIL_FLASH_INPUT_SPEED_SWITCH,
    UHIL_CAP_TEST_MODE | UHIL_CAP_HOST_INPUT | UHIL_CAP_TIME_SYNC | UHIL_CAP_EVENT_RESEND | UHIL_CAP_CONFIG_SET |
        UHIL_CAP_REFERENCE_RNG,
    0, FLASH_PLAYERS, pins, sizeof pins,
    power_on, shutdown, on_input, deadline, run_deadline, state, cards, idle, config_ok
};
