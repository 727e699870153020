"""The function images against the exec functions; prints Markdown tables (medians of repeated runs).

    python bench/container.py            # full: every image, 11 cold starts, 5 renders each way
    python bench/container.py --quick    # smoke: set-image only, one repeat (the test suite runs this)

Builds the images first with scripts/build-image.sh (cached by content) and runs them under podman as kpt
does: ``podman run --rm -i --network none --user nobody --security-opt=no-new-privileges``. Sections:
image sizes; cold start of each function as an image against its exec console script on the same
10-item ResourceList; ``kpt fn render`` and ``kustomize build`` of examples/staged-deploy with exec
functions against the same pipeline with images.
"""

from __future__ import annotations

import argparse
import functools
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent / "tests"))
if TYPE_CHECKING:
    from bench import gen
    from bench.functions import BIN, ROOT, function_config, median_of, render_config, table, timed
else:
    import gen
    from functions import BIN, ROOT, function_config, median_of, render_config, table, timed

from container_support import configs_to_containers, engine_env, images, kptfile_to_images
from e2e import derive_source, tool

# kpt's own flags for an image function (kpt fn render/eval with KPT_FN_RUNTIME=podman).
AS_KPT = ["run", "--rm", "-i", "--network", "none", "--user", "nobody", "--security-opt=no-new-privileges"]
MB = 1_000_000


def podman(*args: str) -> str:
    return subprocess.run(["podman", *args], capture_output=True, text=True, check=True).stdout


def succeeded(args: list[str], stdin: bytes | None = None, **kwargs: Any) -> tuple[float, int, int]:
    """``timed`` that fails the benchmark on any non-zero exit: a refused input is not a measurement."""
    seconds, rss, code = timed(args, stdin, **kwargs)
    if code:
        raise SystemExit(f"{' '.join(args)} exited {code}")
    return seconds, rss, code


def sizes(refs: dict[str, str]) -> None:
    """Whole image, the base under it, and the layers krmfn adds (shared, then per function)."""
    rows = []
    for name, ref in refs.items():
        inspected = json.loads(podman("image", "inspect", ref))[0]
        history = json.loads(podman("image", "history", "--format", "json", ref))
        # Newest first: the oldest layer is the base; krmfn's venv is the one COPY, the entrypoint a RUN.
        base = history[-1]["size"]
        venv = sum(h["size"] for h in history if "COPY" in h.get("CreatedBy", ""))
        link = sum(h["size"] for h in history if "ln -s" in h.get("CreatedBy", ""))
        rows.append(
            [
                f"`{name}`",
                f"{inspected['Size'] / MB:.1f}",
                f"{base / MB:.1f}",
                f"{venv / MB:.1f}",
                f"{link / 1000:.1f} kB",
            ]
        )
    table(
        "Image size (MB; every image shares the base and the krmfn layer)",
        ["image", "total", "Debian base", "krmfn venv (shared)", "own layer"],
        rows,
    )


def cold_start(refs: dict[str, str], repeats: int) -> None:
    base_ref = next(iter(refs.values()))
    noop, _ = median_of(
        repeats, lambda: succeeded(["podman", *AS_KPT, "--entrypoint", "true", base_ref], b"")
    )
    rows = [["`podman run` of `true`", "-", f"{noop * 1000:.0f}", "-", "-"]]
    for name, ref in refs.items():
        config = render_config() if name == "render" else function_config(name)
        data = gen.resource_list(10, config).encode()
        exec_s, _ = median_of(repeats, functools.partial(succeeded, [str(BIN / f"krmfn-{name}")], data))
        image_s, _ = median_of(repeats, functools.partial(succeeded, ["podman", *AS_KPT, ref], data))
        rows.append(
            [
                f"`{name}`",
                f"{exec_s * 1000:.0f}",
                f"{image_s * 1000:.0f}",
                f"{(image_s - exec_s) * 1000:.0f}",
                f"{image_s / exec_s:.1f}",
            ]
        )
    table(
        "Cold start on a 10-item ResourceList, exec vs image (median ms)",
        ["function", "exec", "image (podman, as kpt)", "image - exec", "ratio"],
        rows,
    )


def render(refs: dict[str, str], repeats: int, kpt: str, kustomize: str) -> None:
    env = engine_env()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        exec_pkg = derive_source(ROOT / "examples" / "staged-deploy", Path(tmp) / "exec")
        image_pkg = Path(tmp) / "image" / exec_pkg.name
        shutil.copytree(exec_pkg, image_pkg)
        kptfile_to_images(image_pkg, refs)
        configs_to_containers(image_pkg, refs)
        # kpt renders in place: from the second run on it re-renders rendered files, both ways alike.
        commands = [
            ("`kpt fn render`", [kpt, "fn", "render", "--allow-exec", "."], [kpt, "fn", "render", "."]),
            (
                "`kustomize build --enable-alpha-plugins`",
                [kustomize, "build", "--enable-alpha-plugins", "--enable-exec", "."],
                [kustomize, "build", "--enable-alpha-plugins", "."],
            ),
        ]
        for label, by_exec, by_image in commands:
            exec_s, _ = median_of(repeats, functools.partial(succeeded, by_exec, cwd=exec_pkg, env=env))
            image_s, _ = median_of(repeats, functools.partial(succeeded, by_image, cwd=image_pkg, env=env))
            rows.append([label, f"{exec_s:.2f}", f"{image_s:.2f}", f"{image_s / exec_s:.1f}"])
    table(
        "Rendering examples/staged-deploy (six functions), exec vs images (median seconds)",
        ["command", "exec", "images", "ratio"],
        rows,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smoke mode: set-image only, one repeat")
    args = parser.parse_args()
    refs = images()
    if args.quick:
        refs = {"set-image": refs["set-image"]}
    kpt, kustomize = tool("kpt"), tool("kustomize")
    podman_version = podman("--version").strip()
    print(f"python {sys.version.split()[0]}, {podman_version}, images {sorted(set(refs.values()))}")
    sizes(refs)
    cold_start(refs, 1 if args.quick else 11)
    render(images(), 1 if args.quick else 5, kpt, kustomize)


if __name__ == "__main__":
    main()
