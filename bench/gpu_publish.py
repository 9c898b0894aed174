"""Copy a bench/gpu_check report from a GPU machine into the repo, saying where it came from.

    .venv/bin/python -m bench.gpu_publish DIR --where TEXT --command TEXT

DIR holds report.md and report.json as ``python -m bench.gpu_check`` wrote them on the GPU
machine. Writes bench/GPU.md (an origin note, then the report unchanged) and bench/GPU.json
(the report with an "origin" entry). The figures are the check's own: nothing is recomputed.
"""

from __future__ import annotations

import argparse
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def origin_note(where: str, command: str, report: dict) -> str:
    machine = report.get("machine", {})
    return (f"> Measured on {where}, {machine.get('date', '?')}, by `{command}` "
            f"(torch {machine.get('torch', '?')}); copied here by `python -m bench.gpu_publish`. "
            "docs/gpu.md says how to read it and how to run it again.\n")


def publish(src: str, where: str, command: str, out_dir: str = os.path.join(ROOT, "bench")) -> tuple[str, str]:
    with open(os.path.join(src, "report.json"), encoding="utf-8") as f:
        report = json.load(f)
    with open(os.path.join(src, "report.md"), encoding="utf-8") as f:
        text = f.read()
    title, _, rest = text.partition("\n")
    md_path, js_path = os.path.join(out_dir, "GPU.md"), os.path.join(out_dir, "GPU.json")
    with open(md_path, "w", encoding="utf-8") as f:
        f.write(f"{title}\n\n{origin_note(where, command, report)}{rest}")
    with open(js_path, "w", encoding="utf-8") as f:
        json.dump({"origin": {"where": where, "command": command}, **report}, f, indent=1)
        f.write("\n")
    return md_path, js_path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.gpu_publish", description=__doc__.splitlines()[0])
    parser.add_argument("src", help="folder with report.md and report.json from bench.gpu_check")
    parser.add_argument("--where", required=True, help="the machine, in words")
    parser.add_argument("--command", required=True, help="the command that wrote the report")
    args = parser.parse_args(argv)
    for name in ("report.md", "report.json"):
        if not os.path.isfile(os.path.join(args.src, name)):
            parser.error(f"{args.src} has no {name}: give the folder bench.gpu_check wrote")
    print(*publish(args.src, args.where, args.command), sep="\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
