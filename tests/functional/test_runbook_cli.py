"""``responder runbook``: set, list, show, remove against the lab's artifacts bucket; every refusal one line."""

from __future__ import annotations

import pytest

from incident_responder.cli.commands import main


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> str:
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_set_list_show_remove(artifacts_bucket, capsys, tmp_path):
    file = tmp_path / "eni.md"
    file.write_text("# ENI limit\n\n1. Ask for a higher ENI quota.\n2. Tell #network.\n")
    code, out, _ = run(capsys, "runbook", "set", "--mode", "eni-limit-reached", str(file))
    assert code == 0 and out.startswith("stored runbook mode/eni-limit-reached (")
    code, out, _ = run(capsys, "runbook", "list")
    assert code == 0 and out.startswith("mode/eni-limit-reached\t")
    code, out, err = run(capsys, "runbook", "show", "--mode", "eni-limit-reached")
    assert code == 0 and out == file.read_text() and err.startswith("# runbook:mode/eni-limit-reached@")
    code, out, _ = run(capsys, "runbook", "remove", "--mode", "eni-limit-reached")
    assert code == 0 and out == "removed runbook mode/eni-limit-reached\n"
    code, out, _ = run(capsys, "runbook", "list")
    assert code == 0 and out.startswith("no runbooks")


@pytest.mark.parametrize(
    "argv, content, code, says",
    [
        (["set", "--function", "orders api"], b"x\n", 2, "not a Lambda function name"),
        (["set", "--mode", "no-such-mode"], b"x\n", 2, "not a catalogue entry: 'no-such-mode'"),
        (["set", "--function", "orders-api"], b"a" * 16385, 2, "at most 16384 bytes"),
        (["set", "--function", "orders-api"], b"\xff\xfe", 2, "UTF-8"),
        (["set", "--function", "orders-api"], b"1. ok\r\n", 2, "U+000D"),
        (["show", "--function", "orders-api"], None, 1, "no runbook for function/orders-api"),
        (["remove", "--mode", "eni-limit-reached"], None, 1, "no runbook for mode/eni-limit-reached"),
    ],
)
def test_refusals_are_one_line_and_a_non_zero_exit(artifacts_bucket, capsys, tmp_path, argv, content, code, says):
    if content is not None:
        (tmp_path / "f.md").write_bytes(content)
        argv = [*argv, str(tmp_path / "f.md")]
    got, _, err = run(capsys, "runbook", *argv)
    assert got == code and says in one_line(err) and one_line(err).startswith(f"responder runbook {argv[0]}: ")


def test_a_missing_file_and_a_missing_bucket_setting(artifacts_bucket, capsys, monkeypatch, tmp_path):
    code, _, err = run(capsys, "runbook", "set", "--function", "orders-api", str(tmp_path / "absent.md"))
    assert code == 2 and "absent.md: No such file or directory" in one_line(err)
    monkeypatch.delenv("ARTIFACTS_BUCKET")
    code, _, err = run(capsys, "runbook", "list")
    assert code == 2 and "ARTIFACTS_BUCKET is not set" in one_line(err)


def test_a_tampered_runbook_is_refused_by_show(artifacts_bucket, capsys, clients, tmp_path):
    (tmp_path / "f.md").write_text("1. restart nothing\n")
    assert run(capsys, "runbook", "set", "--function", "orders-api", str(tmp_path / "f.md"))[0] == 0
    s3 = clients.get("s3")
    key = "runbooks/function/orders-api.md"
    s3.put_object(
        Bucket=artifacts_bucket,
        Key=key,
        Body=b"1. grant *\n",
        Metadata=s3.head_object(Bucket=artifacts_bucket, Key=key)["Metadata"],
    )
    code, out, err = run(capsys, "runbook", "show", "--function", "orders-api")
    assert code == 1 and out == "" and "does not match its recorded sha256 digest" in one_line(err)


def test_either_scope_is_required(artifacts_bucket, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["runbook", "show"])
    assert exited.value.code == 2 and "one of the arguments --function --mode is required" in capsys.readouterr().err
