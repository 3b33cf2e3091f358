"""DISPLAY naming a display that is not there: one line and exit 2, not Qt's abort (issue 19,
finding 12), and the reachability check itself against sockets that do listen."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from lanemon.cli import X11_SOCKET_DIR, X11_TCP_BASE, x_display_unreachable


def _free_display_number() -> int:
    """A display number with no server: neither its socket file nor its abstract socket answers."""
    for n in range(87, 400):
        path = os.path.join(X11_SOCKET_DIR, f"X{n}")
        if os.path.exists(path):
            continue
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            try:
                s.connect("\0" + path)
            except OSError:
                return n
    raise AssertionError("no free display number")


def test_a_display_with_no_server_is_one_line_and_exit_2():
    n = _free_display_number()
    env = {k: v for k, v in os.environ.items() if k not in ("WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env["DISPLAY"] = f":{n}"
    out = subprocess.run([sys.executable, "-m", "lanemon"], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert out.stderr.startswith(f"lanemon: error: cannot open display ':{n}'")
    assert out.stderr.count("\n") == 1
    assert "xcb-cursor0" not in out.stderr


def test_a_listening_local_socket_is_reachable(tmp_path):
    n = 5
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(tmp_path / f"X{n}"))
        server.listen(16)
        for name in (f":{n}", f":{n}.0", f"unix:{n}", f"myhost/unix:{n}.1"):
            assert x_display_unreachable(name, socket_dir=str(tmp_path)) is None, name
    why = x_display_unreachable(f":{n + 1}", socket_dir=str(tmp_path))
    assert why == f"no X server answers on {tmp_path / f'X{n + 1}'}"


def test_tcp_displays_connect_to_port_6000_plus_n():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        port = server.getsockname()[1]
        assert port > X11_TCP_BASE  # ephemeral ports lie far above 6000
        assert x_display_unreachable(f"127.0.0.1:{port - X11_TCP_BASE}") is None
    # the same port once nobody listens there
    why = x_display_unreachable(f"127.0.0.1:{port - X11_TCP_BASE}")
    assert why is not None and f"port {port}" in why


def test_names_of_another_shape_are_left_to_qt(tmp_path):
    for name in ("garbage", "host::0", ":x", ""):
        assert x_display_unreachable(name, socket_dir=str(tmp_path)) is None, name
