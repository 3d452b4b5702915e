"""boincpy.testing.client: start, talk to, stop and clean up a stock client."""

import os
import shutil

import pytest

from boincpy.testing.client import ClientError, StockClient, free_port


def test_start_stop_and_cleanup():
    client = StockClient()
    with client:
        assert client.running()
        assert client._listening()                  # our process holds the port
        assert client.project_status() == []
        # boinccmd with a wrong GUI password is refused: the client is ours
        other = StockClient(data_dir=client.data_dir + "-other", port=client.port,
                            gui_password="wrong")
        assert other.boinccmd("--quit", check=False).returncode != 0
        shutil.rmtree(other.data_dir)
        assert client.running()
    assert not client.running()
    assert not os.path.exists(client.data_dir)


def test_failure_keeps_the_data_directory(capsys):
    client = StockClient()
    with pytest.raises(ZeroDivisionError):
        with client:
            1 / 0
    assert not client.running()
    assert os.path.exists(os.path.join(client.data_dir, "client.log"))
    assert client.data_dir in capsys.readouterr().err
    shutil.rmtree(client.data_dir)


def test_missing_program_and_dead_client_are_clear_errors():
    client = StockClient(boinc="/nonexistent/boinc")
    with pytest.raises(ClientError, match="cannot run /nonexistent/boinc"):
        client.start()
    client.close()
    assert not os.path.exists(client.data_dir)
    # a client that dies at start-up (bad option) is reported with its log
    client = StockClient(extra_args=("--no_such_option",))
    with pytest.raises(ClientError, match="exited"):
        client.start(timeout=20)
    client.close()


def test_free_port_is_bindable():
    import socket
    port = free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
