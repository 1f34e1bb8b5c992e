"""The parts of labgrid support that need no coordinator: URLs, the pyserial clash, the exporter
configuration `unohil emulate --labgrid-exporter` writes."""
import subprocess
import sys

import pytest
import yaml

from unohil.harness.errors import DeviceURLError
from unohil.harness.links.labgrid import parse, serial_clash


def test_labgrid_urls():
    assert parse("labgrid://sd1") == ("sd1", {})
    assert parse("labgrid://+") == ("+", {})
    assert parse("labgrid://?unit=showdown&rig=a") == (None, {"unit": "showdown", "rig": "a"})
    for bad, why in (("labgrid://", "name a place"), ("labgrid://sd1?unit=showdown", "not both"),
                     ("labgrid://?Unit=showdown", "lower-case")):
        with pytest.raises(DeviceURLError, match=why):
            parse(bad)


def test_the_pyserial_clash_is_told_apart():
    def broken():
        raise ImportError("No module named 'serial'")
    assert serial_clash({"rich"}, lambda: None) is None
    assert serial_clash({"pyserial"}, lambda: None) is None
    level, text = serial_clash({"pyserial", "pyserial-labgrid"}, lambda: None)
    assert level == "warning" and "never uninstall one of them alone" in text
    level, text = serial_clash({"pyserial-labgrid"}, broken)
    assert level == "error" and "pip install --force-reinstall --no-deps pyserial-labgrid" in text
    assert "is installed" in text


def test_emulate_writes_the_exporter_configuration_of_its_units(tmp_path):
    out = tmp_path / "exporter.yaml"
    proc = subprocess.Popen([sys.executable, "-m", "unohil.emulator", "flash", "--tcp", "127.0.0.1:0", "--count", "2",
                             "--serial", "40", "--labgrid-exporter", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        urls = [proc.stdout.readline().strip() for _ in range(2)]
        text = out.read_text()
        assert "#" not in text          # labgrid reads it as a Jinja2 template: '#' starts a statement there
        config = yaml.safe_load(text)
        assert config == {f"flash-{40 + i}": {"NetworkSerialPort": {
            "host": "127.0.0.1", "port": int(url.rsplit(":", 1)[1]), "protocol": "raw", "speed": 115200}}
            for i, url in enumerate(urls)}
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_exporter_configuration_and_connection_log_need_tcp(tmp_path):
    r = subprocess.run([sys.executable, "-m", "unohil.emulator", "showdown", "--labgrid-exporter", str(tmp_path / "x")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "need --tcp HOST:PORT" in r.stderr
    assert not (tmp_path / "x").exists()
