"""An emu:// unit on the virtual clock hands its frames to the harness as objects, both ways: the same run as
over bytes (wire=bytes, where the codec is on the path), to every field of the results; the bytes are still
there for whoever reads bytes, and a faulty line always has them."""
from __future__ import annotations

import json

import pytest

from unohil.harness import Driver
from unohil.harness.cli import main
from unohil.harness.errors import DeviceURLError
from unohil.harness.links import open_link
from unohil.harness.run.packed import pack
from unohil.protocol import StreamDecoder, catalogue as cat, encode, encode_raw, msg
from unohil.protocol.codec import WIRE_SIZE

KINDS = ("flash", "launcher", "showdown")       # the order a run lists its default units in
WALL_CLOCK = {"started_unix", "duration_s", "wall_s"}


def _without(doc, keys):
    if isinstance(doc, dict):
        return {k: _without(v, keys) for k, v in doc.items() if k not in keys}
    if isinstance(doc, list):
        return [_without(v, keys) for v in doc]
    return doc


def _run_library(tmp_path, name: str, devices: list[str]) -> str:
    out = tmp_path / f"{name}.json"
    args = ["run", "--json", str(out), "--store", "off", "-q"]
    for url in devices:
        args += ["--device", url]
    assert main(args) == 0
    return out.read_text()


def test_the_whole_library_runs_the_same_with_frames_as_objects_and_as_bytes(tmp_path):
    objects = json.loads(_run_library(tmp_path, "objects", [f"emu://{k}" for k in KINDS]))
    text = _run_library(tmp_path, "bytes", [f"emu://{k}?wire=bytes" for k in KINDS])
    on_bytes = json.loads(text.replace("?wire=bytes", ""))      # the URLs, wherever a result names its unit
    assert [d["url"] for d in objects["devices"]] == [f"emu://{k}" for k in KINDS]
    assert text.count("?wire=bytes") > 100 and on_bytes["summary"]["races"] > 300
    # every verdict, event, time and health figure (bytes_rx: what the frames take on a byte link) alike
    assert _without(objects, WALL_CLOCK) == _without(on_bytes, WALL_CLOCK)


def test_which_links_hand_frames():
    assert open_link("emu://showdown").hands_frames
    assert open_link("emu://showdown?wire=frames").hands_frames
    assert not open_link("emu://showdown?wire=bytes").hands_frames
    assert not open_link("emu://showdown?faults=corrupt=0").hands_frames       # a faulty line works on bytes
    assert not open_link("emu://showdown?baud=115200").hands_frames


@pytest.mark.parametrize("url, says", [
    ("emu://showdown?wire=frames&faults=dup=0.1", "wire=frames cannot go through a faulty line"),
    ("emu://showdown?wire=morse", "wire must be one of frames, bytes"),
    ("emu://showdown?clock=real&wire=frames", "its wire is bytes"),
])
def test_a_wire_that_cannot_be_is_refused(url, says):
    with pytest.raises(DeviceURLError, match=says):
        open_link(url)


def test_a_reader_of_bytes_gets_the_bytes_of_the_handed_frames():
    link = open_link("emu://showdown")
    data, _ = link.read(0)                                  # the BOOT, encoded for this reader
    (boot,) = StreamDecoder().feed(data)
    assert boot.msg.NAME == "BOOT" and data == encode(boot.msg, boot.seq, boot.time_us)
    link.write(encode(msg.STATUS_GET(), 7, 0))              # a command as bytes, answered as a frame
    (reply,), _ = link.read_frames(0)
    assert reply.msg.NAME == "STATUS" and reply.msg.cmd_seq == 7


def test_handed_frames_have_the_raw_bytes_they_would_have_had_and_pack():
    with Driver.open("emu://showdown") as d:
        d.input("load_cards", value=2)
        frames = list(d.history)
    assert frames and all(f.raw == encode_raw(f.msg, f.seq, f.time_us) for f in frames)
    assert list(pack(frames)) == frames


def test_a_command_out_of_range_is_refused_before_it_is_handed_over():
    with Driver.open("emu://showdown") as d:
        sent = d.health.frames_tx
        with pytest.raises(ValueError, match="out of range"):
            d.input("load_cards", value=300)            # value is a u8
        assert d.health.frames_tx == sent


@pytest.mark.parametrize("m", [m for m in cat.MESSAGES], ids=lambda m: m.name)
def test_wire_size_is_the_length_of_the_encoded_frame(m):
    message = m.cls(*(0 if f.count == 1 else (0,) * f.count for f in m.fields))
    assert WIRE_SIZE[m.cls] == len(encode(message, 0xFFFF, 0xFFFFFFFF))
