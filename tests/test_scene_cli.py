"""`spectable render`: one PNG (or a frame sequence) with the promised JSON keys; bad input is one line, exit 2."""
import json

import numpy as np
from PIL import Image

from app.cli import main


def test_render_json_writes_png(tmp_path, capsys):
    out = tmp_path / "shot.png"
    rc = main(["render", "--view", "bridge", "--step", "2", "--size", "320x180", "--out", str(out), "--json",
               "--msaa", "0"])
    assert rc == 0
    obj = json.loads(capsys.readouterr().out)
    assert {"draw_calls", "triangles", "frame_ms", "width", "height", "out"} <= set(obj)
    assert (obj["width"], obj["height"], obj["out"]) == (320, 180, str(out))
    assert 0 < obj["draw_calls"] < 60 and 0 < obj["triangles"] < 300_000 and obj["frame_ms"] > 0
    img = np.asarray(Image.open(out))
    assert img.shape[:2] == (180, 320) and img.std() > 10
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp")]


def test_render_stats_and_frames(tmp_path, capsys):
    rc = main(["render", "--frames", "3", "--fps", "10", "--out-dir", str(tmp_path / "seq"), "--size", "160x90",
               "--msaa", "0", "--stats"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "draw calls" in text and "triangles" in text
    frames = sorted((tmp_path / "seq").glob("frame_*.png"))
    assert len(frames) == 3
    a, c = (np.asarray(Image.open(f)).astype(int) for f in (frames[0], frames[2]))
    assert np.abs(a - c).max() > 0          # the animation moves


def test_bad_input_is_one_line_exit_2(tmp_path, capsys):
    for argv in (["render", "--view", "attic"], ["render", "--size", "big"], ["render", "--step", "-1"],
                 ["render", "--out", str(tmp_path / "missing" / "x.png"), "--size", "64x64"],
                 ["render", "--frames", "2"], ["render", "--prefix", "qqq", "--size", "64x64"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.startswith("spectable: error:") and "\n" not in err, err


def test_no_gl_is_an_input_error(monkeypatch, tmp_path, capsys):
    import moderngl

    def broken(*a, **k):
        raise Exception("eglInitialize failed\nmore detail")
    monkeypatch.setattr(moderngl, "create_standalone_context", broken)
    assert main(["render", "--out", str(tmp_path / "x.png"), "--size", "64x64"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("spectable: error: no OpenGL") and "\n" not in err
    assert not (tmp_path / "x.png").exists()
