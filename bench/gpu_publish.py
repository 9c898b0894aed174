"""Copy a bench/gpu_check report from a GPU machine into the repo, saying where it came from.

    .venv/bin/python -m bench.gpu_publish DIR --where TEXT --command TEXT

DIR holds report.md and report.json as ``python -m bench.gpu_check`` wrote them on the GPU
machine. ``--torch-from DIR2`` takes section 2 (torch's runtime on the GPU) from a later run of
that section alone (torch.md and torch.json there: the section's table and its JSON), and the
origin note says so. Writes bench/GPU.md (an origin note, then the report unchanged) and bench/GPU.json
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


def with_torch_section(report: dict, text: str, torch_dir: str, torch_command: str) -> tuple[dict, str]:
    """The report with section 2 (torch's runtime on the GPU) from ``torch_dir``."""
    with open(os.path.join(torch_dir, "torch.json"), encoding="utf-8") as f:
        section = json.load(f)
    with open(os.path.join(torch_dir, "torch.md"), encoding="utf-8") as f:
        table = f.read().strip()
    report["sections"] = [s for s in report["sections"] if s.get("runtime") != "torch"] + [section]
    report["passed"] = all(s["passed"] for s in report["sections"])
    text = text.replace(": NOT all runs passed.", ": sections 1 and 3 as this run left them; section 2 from its own "
                        "run, below.", 1)
    head, _, tail = text.partition("## 2. torch's runtime on the GPU\n")
    _, _, after = tail.partition("\n## 3.")
    note = f"Run again on its own, on the same machine kind that day, by `{torch_command}`:\n\n"
    return report, f"{head}## 2. torch's runtime on the GPU\n\n{note}{table}\n\n## 3.{after}"


def publish(src: str, where: str, command: str, out_dir: str = os.path.join(ROOT, "bench"),
            torch_dir: str | None = None, torch_command: str = "") -> tuple[str, str]:
    with open(os.path.join(src, "report.json"), encoding="utf-8") as f:
        report = json.load(f)
    with open(os.path.join(src, "report.md"), encoding="utf-8") as f:
        text = f.read()
    if torch_dir is not None:
        report, text = with_torch_section(report, text, torch_dir, torch_command)
    title, _, rest = text.partition("\n")
    md_path, js_path = os.path.join(out_dir, "GPU.md"), os.path.join(out_dir, "GPU.json")
    with open(md_path, "w", encoding="utf-8") as f:
        f.write(f"{title}\n\n{origin_note(where, command, report)}{rest}")
    with open(js_path, "w", encoding="utf-8") as f:
        origin = {"where": where, "command": command, **({"torch_section_command": torch_command} if torch_dir else {})}
        json.dump({"origin": origin, **report}, f, indent=1)
        f.write("\n")
    return md_path, js_path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.gpu_publish", description=__doc__.splitlines()[0])
    parser.add_argument("src", help="folder with report.md and report.json from bench.gpu_check")
    parser.add_argument("--where", required=True, help="the machine, in words")
    parser.add_argument("--command", required=True, help="the command that wrote the report")
    parser.add_argument("--torch-from", help="folder with torch.md and torch.json of a run of section 2 alone")
    parser.add_argument("--torch-command", default="", help="the command that wrote --torch-from")
    args = parser.parse_args(argv)
    for name in ("report.md", "report.json"):
        if not os.path.isfile(os.path.join(args.src, name)):
            parser.error(f"{args.src} has no {name}: give the folder bench.gpu_check wrote")
    print(*publish(args.src, args.where, args.command, torch_dir=args.torch_from, torch_command=args.torch_command),
          sep="\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
