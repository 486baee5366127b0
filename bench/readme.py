"""Copy the latest ``bench/results.md`` into the guide (``docs/guide.md``, section "Benchmarks") between the bench
markers; README links there."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
START, END = "<!-- bench:start -->", "<!-- bench:end -->"


def main() -> None:
    readme = ROOT / "docs" / "guide.md"
    text = readme.read_text(encoding="utf-8")
    if START not in text or END not in text:
        raise SystemExit(f"{readme} has no bench markers ({START} ... {END}); put them where the tables go")
    table = (ROOT / "bench" / "results.md").read_text(encoding="utf-8").strip()
    table = table.replace("\n# ", "\n### ").replace("\n## ", "\n#### ")
    if table.startswith("# "):
        table = "### " + table[2:]
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    readme.write_text(f"{head}{START}\n{table}\n{END}{tail}", encoding="utf-8")


if __name__ == "__main__":
    main()
