from tests.test_cli import run
def test_probe(dsn, tmp_path):
    for i in range(3):
        (tmp_path / f"f{i}.md").write_text(f"# F{i}\n\nNote {i} about things.\n")
    for flags in (["--knowledge-type", "gossip"], ["--language", "klingon"], ["--adapter", "nope"], ["--strategy", "weird"], ["--namespace", "Bad Name!"]):
        out = run(["ingest", str(tmp_path), "--no-json", *flags], dsn)
        print(flags, out.returncode, "STDOUT", out.stdout, "STDERR", out.stderr)
