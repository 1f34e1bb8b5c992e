"""Every conformance check is shown able to fail: for each registered check, a unit with one realistic
firmware mistake ("a mutant") that fails exactly that check, with a detail that names the fault.

A mutant is a subclass of emulator.device.Device run through `conform.run` on the virtual clock.
Where a check needs a capability or a transport, its mutant runs where the check runs. A few faults
cannot help failing a second check, because it judges the same fact again: the checks of the
OVERALL phase judge every frame of the run, and the END phase's reboot repeats the START phase's;
such a second failure is named in the mutant's `also`, and must happen too.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from unohil.emulator.usb_backend import EmulatedBackend
from unohil.harness import conform
from unohil.harness.conform.registry import CHECKS
from unohil.harness.links import usb as usb_link

from test_conform import ResendNewTimes, StampsWhenRun, TwiceStatus, WrongLengthNak, _virtual
from mutants_link import (BadVersionWithoutMajor, CancelAckNamesInject, DropsTheReadAfterNoise, EchoesHostMajor,
                          EveryRefusalWrongState, HelloCancelsStimuli, HelloRefusedNewGame, InputHandlerLeftIn,
                          LengthOfTheLastRead, NaksEmptyFrames, NaksShortFrames, NoPlayers, OneCommandBuffer,
                          OneInputTooMany, RefusedLoadAddsCards, RepliesAsUnsupported, RunsABadCrcReset,
                          SeenBeforeAck, SeesUnknownInputs, StatusStateZero, StrictLength, TooLongAsBadCrc,
                          WrongStateWithoutState)
from mutants_state import (AnyCatalogueParam, AnyModeNewGame, BootBanner, BootCountedTwice, BootsAsPowerOn,
                           BusyStillStores, EmptyResendIsEverything, ErrorNaksAtZero, ErrorPathCountsTwice,
                           FastCrystal, IgnoresTheValue, NewGameBeforeModeCheck, NewGameDropsStimuli,
                           NewGameRestoresDefaults, NextIsTheLast, NowIsNotTooLate, OneStimulusTooMany,
                           QueuesABadInject, RangeBeforeState, RebootKeepsStimuli, RefusesTheMax, ResetKeepsQuiet,
                           ResetLeavesTheRaceRunning, ReversedRead, RunsALateStimulus, SensesLandingOnAFlash,
                           SlowTimeSync, SmallRing, StaleGoTimeout, StateBeforeValue, StoresBeforeRangeCheck,
                           TimeBeforeInput, UnknownParamWritesModulo, UnsupportedButSeen)


# ---- the table: each check, the mutant that fails it, and the words its detail must have ----

def _key(c) -> str:
    """A check's key in MUTANTS: its module and function, e.g. "framing.bad_crc"."""
    return f"{c.run.__module__.rsplit('.', 1)[-1]}.{c.run.__name__}"


CHECK_BY_KEY = {_key(c): c for c in CHECKS}


@dataclass(frozen=True)
class Mutant:
    device: type | None                 # the Device subclass (None: the transport is what is broken)
    check: str                          # the key of the check it fails
    words: str                          # what that check's detail must say
    kind: str = "showdown"
    options: dict = field(default_factory=dict)     # Device options: the variant where the check runs
    also: tuple[tuple[str, str], ...] = ()          # (check, words): the same fault judged again
    usb: dict | None = None             # run over the emulated USB bus, with these EmulatedUnit options

    def __str__(self):
        return f"{self.check}-{self.device.__name__ if self.device else 'usb'}"


def _flash_mutants() -> list:
    """The Flash base's SPEC 8 checks (FL-23, FL-24, FL-25, FL-28), each with a base giving the other answer."""
    from test_conform_decision_mutants import with_model
    from test_flash_forms import (CancelsSleepAtReset, KeepsSleepOverReset, ReportsMissingButtonsWhenOff,
                                  ResetSwitchesOn, SleepsAtOnceBeyondHalfWrap)
    return [
        # the maximum period also puts it to sleep at once where the configuration checks set it
        Mutant(with_model(SleepsAtOnceBeyondHalfWrap), "flash.long_sleep_period", "must be armed in steps",
               kind="flash", also=(("config.config_ranges", "NAK wrong_state"),
                                   ("config.config_seed", "NAK wrong_state"))),
        Mutant(with_model(KeepsSleepOverReset), "flash.reset_restarts_sleep", "restarts at the RESET",
               kind="flash"),
        Mutant(with_model(CancelsSleepAtReset), "flash.reset_restarts_sleep", "not cancel it", kind="flash"),
        Mutant(with_model(ReportsMissingButtonsWhenOff), "flash.off_refuses_bad_values",
               "expected NAK bad_value (FL-25)", kind="flash"),
        Mutant(with_model(ResetSwitchesOn), "flash.reset_while_off", "the power switch stays off", kind="flash"),
    ]


FLASH_MUTANTS = _flash_mutants()

MUTANTS = [
    Mutant(NoPlayers, "handshake.identity", "players 0 (expected 2)"),
    Mutant(EchoesHostMajor, "handshake.hello_version", "NAK bad_version detail 2, expected 1"),
    Mutant(HelloRefusedNewGame, "handshake.hello_version", "the unit sent STATE"),
    Mutant(HelloCancelsStimuli, "handshake.hello_again", "pending_injects"),
    Mutant(StrictLength, "handshake.newer_minor", "answered NAK bad_length"),
    Mutant(NaksEmptyFrames, "framing.empty_frames", "empty frames were answered: NAK bad_crc"),
    Mutant(LengthOfTheLastRead, "framing.byte_at_a_time", "NAK bad_length"),
    Mutant(RunsABadCrcReset, "framing.bad_crc", "refused as bad_crc were acted on: after them the unit sent STATE"),
    Mutant(TooLongAsBadCrc, "framing.too_long", "expected NAK frame_too_long, got NAK bad_crc"),
    Mutant(NaksShortFrames, "framing.noise", "line noise was answered: NAK bad_crc"),
    Mutant(DropsTheReadAfterNoise, "framing.resync", "after garbage + delimiter",
           also=(("stream.one_reply_each", "never answered: STATUS_GET"),)),
    Mutant(BadVersionWithoutMajor, "framing.header_version", "NAK bad_version detail 0, expected 1"),
    Mutant(RepliesAsUnsupported, "framing.unknown_type", "expected NAK unknown_type, got NAK unsupported"),
    Mutant(WrongLengthNak, "framing.bad_length", "expected NAK bad_length, got NAK bad_value"),
    Mutant(CancelAckNamesInject, "commands.typed_replies", "ACK of INJECT_CANCEL names type",
           also=(("stream.one_reply_each", "INJECT_CANCEL"),)),
    Mutant(OneCommandBuffer, "commands.batch", "NAK busy"),
    Mutant(SeenBeforeAck, "commands.input_ack_first", "INPUT_SEEN came before the INPUT's ACK"),
    Mutant(OneInputTooMany, "commands.input_unknown", "expected NAK bad_value, got ACK"),
    Mutant(SeesUnknownInputs, "commands.input_unknown", "the unit sent INPUT_SEEN"),
    # refusals come in a state other than 0, where a detail left 0 would be right by chance
    Mutant(WrongStateWithoutState, "commands.input_refused", "NAK wrong_state detail 0, expected 1", kind="flash"),
    Mutant(WrongStateWithoutState, "commands.input_refused", "NAK wrong_state detail 0, expected 2"),
    Mutant(RefusedLoadAddsCards, "commands.input_refused", "the unit sent SD_CARDS"),
    # the NAK's detail is right and STATUS is not: the message blames STATUS, in each check that reads its state
    Mutant(StatusStateZero, "commands.input_refused",
           "STATUS.state 0, but the unit's last STATE event says 2: STATUS misreports the unit's state",
           also=(("commands.input_value_not_taken", "STATUS.state 0, but the unit's last STATE event says 1"),
                 ("config.config_busy", "STATUS.state 0, but the unit's last STATE event says 2"),
                 ("commands.value_before_state", "STATUS misreports the unit's state"))),
    Mutant(EveryRefusalWrongState, "commands.input_refused_value", "expected NAK bad_value, got NAK wrong_state",
           also=(("commands.input_value_not_taken", "expected NAK bad_value, got NAK wrong_state"),
                 ("commands.value_before_state", "expected NAK bad_value, got NAK wrong_state"))),
    Mutant(InputHandlerLeftIn, "commands.unsupported", "expected NAK unsupported, got ACK",
           options={"without": "host_input"}),
    Mutant(UnsupportedButSeen, "commands.unsupported", "the unit sent INPUT_SEEN", options={"without": "host_input"}),
    Mutant(StaleGoTimeout, "config.config_defaults", "go_timeout_us = 500000, default 5000000"),
    Mutant(RefusesTheMax, "config.config_ranges", "expected CONFIG_VALUE 4294967295"),
    Mutant(StoresBeforeRangeCheck, "config.config_ranges", "refused, yet"),
    Mutant(AnyCatalogueParam, "config.config_unknown", "expected NAK unknown_param, got CONFIG_VALUE"),
    Mutant(UnknownParamWritesModulo, "config.config_unknown", "refused, changed"),
    Mutant(RangeBeforeState, "config.config_busy", "expected NAK wrong_state, got NAK bad_value"),
    Mutant(BusyStillStores, "config.config_busy", "refused as wrong_state changed"),
    Mutant(NewGameRestoresDefaults, "config.config_seed", "after RESET new_game"),
    Mutant(StampsWhenRun, "inject.inject", "stamped off their scheduled time"),
    Mutant(NowIsNotTooLate, "inject.inject_too_late", "expected NAK too_late, got ACK"),
    Mutant(RunsALateStimulus, "inject.inject_too_late", "the unit sent INPUT_SEEN"),
    Mutant(TimeBeforeInput, "inject.inject_bad_value", "expected NAK bad_value, got NAK too_late"),
    Mutant(QueuesABadInject, "inject.inject_bad_value", "changed STATUS.pending_injects: 0 -> 2"),
    Mutant(OneStimulusTooMany, "inject.inject_queue", "expected NAK queue_full, got ACK"),
    Mutant(BootsAsPowerOn, "reset.reboot", "BOOT reason 0, expected reset_command",
           also=(("reset.reboot_restores", "BOOT reason 0, expected reset_command"),)),
    Mutant(AnyModeNewGame, "reset.reset_bad_mode", "expected NAK bad_value, got ACK"),
    Mutant(NewGameBeforeModeCheck, "reset.reset_bad_mode", "the unit sent STATE"),
    Mutant(NewGameDropsStimuli, "reset.reset_new_game", "left 0 stimuli pending, expected 1"),
    Mutant(SensesLandingOnAFlash, "handshake.caps_of_the_kind", "sets landing_sensor, not a capability of the flash",
           kind="flash"),
    Mutant(StateBeforeValue, "commands.value_before_state",
           "INPUT timer press 1 in state 0 (PR-6: bad_value before the state's rules): expected NAK bad_value, "
           "got NAK wrong_state"),
    # a unit that takes every value breaks PR-6 in every state too
    Mutant(IgnoresTheValue, "commands.input_value_not_taken", "expected NAK bad_value, got ACK",
           also=(("commands.value_before_state", "expected NAK bad_value, got ACK"),)),
    Mutant(IgnoresTheValue, "commands.input_value_not_taken", "expected NAK bad_value, got ACK", kind="launcher",
           also=(("commands.value_before_state", "expected NAK bad_value, got ACK"),)),
    Mutant(ResetKeepsQuiet, "reset.reset_in_play", "emitted nothing before STATE, expected ['SD_CARDS']"),
    # its stray timers go on firing into the checks after it: the next one that watches for events sees them
    Mutant(ResetLeavesTheRaceRunning, "reset.reset_in_play", "SD_VERDICT after RESET new_game",
           also=(("inject.inject_too_late", "after them the unit sent SD_BEEP"),)),
    Mutant(ResetKeepsQuiet, "reset.reset_in_play", "emitted nothing before STATE, expected ['LA_RESULT']",
           kind="launcher"),
    Mutant(RebootKeepsStimuli, "reset.reboot_restores", "stimuli survived RESET reboot"),
    Mutant(ResendNewTimes, "events.resend", "originally"),
    Mutant(EmptyResendIsEverything, "events.resend_nothing", "EVENT_RESEND count 0: ACK value"),
    Mutant(SmallRing, "events.resend_buffer", "ACK value 32, expected 64"),
    # without event_resend: the EVENT_RESEND checks would be misled by the wrong seq too
    Mutant(NextIsTheLast, "events.next_event_seq", "STATUS.next_event_seq", options={"without": "event_resend"}),
    Mutant(SlowTimeSync, "timesync.time_sync", "turnaround t3 - t2 up to 60000 us"),
    Mutant(FastCrystal, "timesync.clock_rate", "+20000 ppm"),
    Mutant(None, "usb.usb_serial", "iSerialNumber '0000002a'", usb={"serial": 0x2A, "serial_string": "0000002a"}),
    Mutant(BootBanner, "stream.stream_clean", "1 bad frame(s) from the device: cobs"),
    Mutant(ErrorPathCountsTwice, "stream.header_seq", "gap(s)"),
    Mutant(ErrorNaksAtZero, "stream.reply_times", "device time went back"),
    Mutant(TwiceStatus, "stream.one_reply_each", "answered more than once"),
    # replies can only come out of order where commands overlap, as in one write of three
    Mutant(ReversedRead, "stream.reply_order", "came before the reply to an earlier command",
           also=(("commands.batch", "came out of order"),)),
    Mutant(BootCountedTwice, "stream.event_seq", "BOOT 0 then"),
    *FLASH_MUTANTS,
]


def _run(m: Mutant):
    if m.usb is None:
        return conform.run(_virtual(m.device, m.kind, **m.options), scenarios=None)
    with EmulatedBackend() as bus:
        bus.add(m.kind, **m.usb)
        previous = usb_link.set_backend(bus)
        try:
            link = usb_link.open_usb("usb://1209:0001")
            try:
                return conform.run(link, scenarios=None)
            finally:
                link.close()
        finally:
            usb_link.set_backend(previous)


@pytest.mark.parametrize("m", MUTANTS, ids=str)
def test_the_mutant_fails_its_check_and_only_that(m):
    report = _run(m)
    failed = {c.name: c for c in report.checks if c.status in ("fail", "error")}
    want = {CHECK_BY_KEY[k].name: words for k, words in ((m.check, m.words), *m.also)}
    assert set(failed) == set(want), {n: c.detail for n, c in failed.items()}
    for name, words in want.items():
        assert failed[name].status == "fail" and words in failed[name].detail, failed[name].detail
    assert not report.passed and not report.aborted


def test_every_registered_check_has_a_mutant():
    covered = {m.check for m in MUTANTS}
    assert covered <= set(CHECK_BY_KEY), f"mutants of checks that do not exist: {covered - set(CHECK_BY_KEY)}"
    missing = [f"{k} ({CHECK_BY_KEY[k].section} {CHECK_BY_KEY[k].name})" for k in CHECK_BY_KEY if k not in covered]
    assert not missing, "checks no mutant shows able to fail: " + "; ".join(missing)
    assert len(CHECK_BY_KEY) == len(CHECKS), "two checks share a module and function"
