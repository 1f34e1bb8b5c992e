/* The card launcher (SPEC 9). Its one deadline is the next card of a burst; like every deadline of the
 * launcher it comes before an input at the same instant (LA-9), so on_input first runs the cards due
 * at or before the edge. The power switch and the door are physical: the unit tracks their positions
 * in every state, and RESET new_game keeps them (LA-7). Every LA_DING is followed by exactly one
 * LA_RESULT, whatever ends its press (LA-8, LA-13). */
#include <string.h>

#include "launcher.h"
#include "../uhil_algorithms.h"

/* ---- events ---- */

static void top_light(struct launcher *l, struct unit *u, uint8_t mode)
{
    l->top_flashing = mode == UHIL_LIGHT_MODE_FLASH;
    unit_light(u, UHIL_LAUNCHER_LIGHT_TOP, mode, UHIL_NONE_U8);
}

static void top_off(struct launcher *l, struct unit *u)     /* the streak restarts (LA-11) */
{
    if (l->top_flashing)
        top_light(l, u, UHIL_LIGHT_MODE_OFF);
}

static void door_event(struct launcher *l, struct unit *u)
{
    struct uhil_msg m;
    memset(&m, 0, sizeof m);
    m.u.la_door.open = l->door_open;
    m.u.la_door.inside = l->inside;
    unit_emit(u, UHIL_LA_DOOR_ID, &m);
}

static void empty(struct launcher *l, struct unit *u)      /* LA-3, LA-12 */
{
    struct uhil_msg m;
    memset(&m, 0, sizeof m);
    m.u.la_empty.fired_total = l->fired_total;
    unit_emit(u, UHIL_LA_EMPTY_ID, &m);
    unit_sound(u, UHIL_LAUNCHER_SOUND_EMPTY, 0);
}

/* the verdict of press l->press, made at p: planned drawn, fired out, knowable at `knowable` */
static void result(struct launcher *l, struct unit *u, uint32_t p, uint8_t planned, uint8_t fired,
                   uint32_t knowable)
{
    struct uhil_msg m;
    struct uhil_la_result *r = &m.u.la_result;
    memset(&m, 0, sizeof m);
    m.type = UHIL_LA_RESULT_ID;
    r->press = l->press;
    r->press_us = p;
    r->planned = planned;
    r->fired = fired;
    r->inside = l->inside;
    r->fired_total = l->fired_total;
    r->loaded_total = l->loaded_total;
    r->knowable_us = knowable;
    unit_verdict(u, &m);
}

/* ---- the burst ---- */

static void card(struct launcher *l, struct unit *u, uint32_t at)
{
    struct uhil_msg m;
    l->inside--;
    l->fired_total++;
    memset(&m, 0, sizeof m);
    m.u.la_card.index = l->fired++;
    m.u.la_card.inside = l->inside;
    m.u.la_card.fired_total = l->fired_total;
    unit_emit(u, UHIL_LA_CARD_ID, &m);
    if (l->fired < l->to_fire) {
        l->next_card_us = at + unit_param(u, UHIL_PARAM_CARD_INTERVAL_US);
        return;
    }
    result(l, u, l->press_us, l->planned, l->fired, at);     /* knowable at the last card (LA-5) */
    if (l->inside == 0)
        empty(l, u);
    l->empty_streak = 0;                                       /* LA-2: after a burst */
    unit_change_state(u, &l->state, UHIL_LAUNCHER_STATE_READY);
}

/* a burst cut short (power off, RESET): its press is closed at t with the cards already out */
static void cut_burst(struct launcher *l, struct unit *u, uint32_t t)
{
    if (l->state == UHIL_LAUNCHER_STATE_FIRING)
        result(l, u, l->press_us, l->planned, l->fired, t);
}

static void fire(struct launcher *l, struct unit *u, uint32_t t)
{
    uint32_t drawn = uhil_burst_draw(unit_rng(u), unit_param(u, UHIL_PARAM_BURST_MIN),
                                     unit_param(u, UHIL_PARAM_BURST_MODE), unit_param(u, UHIL_PARAM_BURST_MAX));
    unit_sound(u, UHIL_LAUNCHER_SOUND_FIRE, 0);
    top_off(l, u);
    l->planned = (uint8_t)drawn;
    l->to_fire = (uint8_t)(drawn < l->inside ? drawn : l->inside);
    l->fired = 0;
    l->press_us = t;
    l->next_card_us = t + unit_param(u, UHIL_PARAM_MOTOR_US);
    unit_change_state(u, &l->state, UHIL_LAUNCHER_STATE_FIRING);
}

/* ---- inputs ---- */

static struct disposition button(struct launcher *l, struct unit *u, uint32_t t, uint8_t action)
{
    struct uhil_msg m;
    uint32_t chance;
    if (action != UHIL_ACTION_PRESS || l->state == UHIL_LAUNCHER_STATE_FIRING)
        return UNIT_REPORTED;                                       /* LA-4 */
    if (l->state == UHIL_LAUNCHER_STATE_DOOR_OPEN)
        return unit_refused(UHIL_ERROR_WRONG_STATE);
    chance = uhil_fire_chance(unit_param(u, UHIL_PARAM_FIRE_BASE_PERMILLE),
                              unit_param(u, UHIL_PARAM_FIRE_STEP_PERMILLE), l->empty_streak);
    l->press++;
    unit_sound(u, UHIL_LAUNCHER_SOUND_DING, 0);
    memset(&m, 0, sizeof m);
    m.u.la_ding.press = l->press;
    m.u.la_ding.empty_streak = l->empty_streak;
    m.u.la_ding.chance_permille = (uint16_t)chance;
    unit_emit(u, UHIL_LA_DING_ID, &m);
    if (l->inside == 0) {                                      /* LA-3: no draw, no trial */
        result(l, u, t, 0, 0, t);
        empty(l, u);
    } else if (uhil_fires(unit_rng(u), chance)) {
        fire(l, u, t);
    } else {
        result(l, u, t, 0, 0, t);
        if (!l->top_flashing)                                  /* LA-11: one LIGHT per change */
            top_light(l, u, UHIL_LIGHT_MODE_FLASH);
        if (l->empty_streak < 255)
            l->empty_streak++;
    }
    return UNIT_ACTED;
}

static struct disposition door(struct launcher *l, struct unit *u, uint8_t action)
{
    uint8_t open = action == UHIL_ACTION_PRESS;
    if (open && l->state == UHIL_LAUNCHER_STATE_FIRING)
        return unit_refused(UHIL_ERROR_WRONG_STATE);                /* LA-4: latched */
    if (open == l->door_open)
        return UNIT_REPORTED;                                       /* LA-7: a redundant edge */
    l->door_open = open;
    door_event(l, u);
    if (open) {
        unit_change_state(u, &l->state, UHIL_LAUNCHER_STATE_DOOR_OPEN);
    } else {
        top_off(l, u);
        l->empty_streak = 0;                                   /* LA-2 */
        unit_change_state(u, &l->state, UHIL_LAUNCHER_STATE_READY);
    }
    return UNIT_ACTED;
}

static struct disposition load(struct launcher *l, struct unit *u, uint8_t action, uint8_t value)
{
    struct uhil_msg m;
    if (l->state != UHIL_LAUNCHER_STATE_DOOR_OPEN)
        return unit_refused(UHIL_ERROR_WRONG_STATE);
    if (action != UHIL_ACTION_PRESS || value < 1 || l->inside + value > LAUNCHER_CAPACITY)
        return unit_refused(UHIL_ERROR_BAD_VALUE);                  /* LA-6 */
    l->inside = (uint8_t)(l->inside + value);
    l->loaded_total = (uint16_t)(l->loaded_total + value);
    memset(&m, 0, sizeof m);
    m.u.la_loaded.added = value;
    m.u.la_loaded.inside = l->inside;
    m.u.la_loaded.loaded_total = l->loaded_total;
    m.u.la_loaded.fired_total = l->fired_total;
    unit_emit(u, UHIL_LA_LOADED_ID, &m);
    return UNIT_ACTED;
}

static struct disposition power(struct launcher *l, struct unit *u, uint32_t t, uint8_t action)
{
    uint8_t on = action == UHIL_ACTION_PRESS;
    if (on == l->on)
        return UNIT_REPORTED;
    l->on = on;
    if (!on) {
        cut_burst(l, u, t);                                    /* LA-8 */
        top_off(l, u);
        unit_change_state(u, &l->state, UHIL_LAUNCHER_STATE_OFF);
    } else {
        l->empty_streak = 0;                                   /* LA-2: at power-on */
        unit_change_state(u, &l->state, l->door_open ? UHIL_LAUNCHER_STATE_DOOR_OPEN : UHIL_LAUNCHER_STATE_READY);
    }
    return UNIT_ACTED;
}

static struct disposition on_input(void *game, struct unit *u, uint32_t t, uint8_t input, uint8_t action,
                                   uint8_t value)
{
    struct launcher *l = game;
    unit_deadlines_until(u, t);                               /* LA-9 */
    if (input == UHIL_LAUNCHER_INPUT_POWER)
        return power(l, u, t, action);
    if (!l->on) {                                             /* off: reported; the door is still read */
        if (input == UHIL_LAUNCHER_INPUT_DOOR)
            l->door_open = action == UHIL_ACTION_PRESS;
        return UNIT_REPORTED;
    }
    if (input == UHIL_LAUNCHER_INPUT_DOOR)
        return door(l, u, action);
    if (input == UHIL_LAUNCHER_INPUT_LOAD_CARDS)
        return load(l, u, action, value);
    return button(l, u, t, action);
}

/* ---- deadlines ---- */

static int deadline(const void *game, uint32_t *at)
{
    const struct launcher *l = game;
    *at = l->next_card_us;
    return l->state == UHIL_LAUNCHER_STATE_FIRING;
}

static void run_deadline(void *game, struct unit *u, uint32_t at)
{
    card(game, u, at);
}

/* ---- life cycle ---- */

static void power_on(void *game, struct unit *u)
{
    struct launcher *l = game;
    (void)u;
    memset(l, 0, sizeof *l);                                  /* LA-10: on, door closed, empty */
    l->on = 1;
    l->state = UHIL_LAUNCHER_STATE_READY;
}

static void shutdown(void *game, struct unit *u)
{
    struct launcher *l = game;
    uint8_t on = l->on, door_open = l->door_open;
    cut_burst(l, u, u->stamp);                               /* LA-13: at the RESET's time */
    top_off(l, u);
    power_on(l, u);
    l->on = on;
    l->door_open = door_open;
    l->state = !on ? UHIL_LAUNCHER_STATE_OFF : door_open ? UHIL_LAUNCHER_STATE_DOOR_OPEN : UHIL_LAUNCHER_STATE_READY;
}

static uint8_t state(const void *game) { return ((const struct launcher *)game)->state; }
static uint8_t cards(const void *game) { return ((const struct launcher *)game)->inside; }

static int idle(const void *game)
{
    uint8_t st = state(game);
    return st == UHIL_LAUNCHER_STATE_READY || st == UHIL_LAUNCHER_STATE_DOOR_OPEN;
}

static int config_ok(const struct unit *u, uint8_t param, uint32_t value)
{
    /* SPEC 4.7: burst_min <= burst_mode <= burst_max, on the values that would result */
    uint32_t mode = unit_param_after(u, UHIL_PARAM_BURST_MODE, param, value);
    return unit_param_after(u, UHIL_PARAM_BURST_MIN, param, value) <= mode &&
           mode <= unit_param_after(u, UHIL_PARAM_BURST_MAX, param, value);
}

/* the push button and the door (level 1 = open) are wired; power is a switch the POSIX port cannot
 * hold, so a board reads it through its own pin if it has one */
static const uint8_t pins[] = {UHIL_LAUNCHER_INPUT_BUTTON, UHIL_LAUNCHER_INPUT_DOOR};

const struct game_ops launcher_ops = {
    UHIL_UNIT_KIND_LAUNCHER, 4, 1u << UHIL_LAUNCHER_INPUT_LOAD_CARDS,
    UHIL_CAP_TEST_MODE | UHIL_CAP_HOST_INPUT | UHIL_CAP_TIME_SYNC | UHIL_CAP_EVENT_RESEND | UHIL_CAP_CONFIG_SET |
        UHIL_CAP_REFERENCE_RNG,
    LAUNCHER_CAPACITY, 0, pins, sizeof pins,
    power_on, shutdown, on_input, deadline, run_deadline, state, cards, idle, config_ok
};
