"""python3 -m taihu: taihu's trainer and ONNX import from the installed package.

    python3 -m taihu train CONFIG [key=value ...] [--resume=CHECKPOINT] [--progress=MODE] [--report=FILE]
    python3 -m taihu import-onnx MODEL.onnx OUT_DIR [--input-shape=NAME=C,H,W ...] [--seed=N]

`train` runs a config as taihu-train does (the same files and overrides) and prints the run's
final figures; `import-onnx` writes OUT_DIR/NAME.ini and NAME.ckpt as `taihu-convert onnx` does.
Exit codes as the apps': 0 done, 2 bad input (config, command line), 1 anything else.
"""
import argparse
import json
import sys

import taihu


def _parser():
    parser = argparse.ArgumentParser(prog="python3 -m taihu", description="taihu from Python's command line")
    commands = parser.add_subparsers(dest="command", required=True)
    train = commands.add_parser("train", help="train a config, as taihu-train does")
    train.add_argument("config", help="an application config (config/*.ini)")
    train.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides (solver.base_lr=0.05)")
    train.add_argument("--resume", help="a checkpoint to continue from")
    train.add_argument("--progress", default="auto", choices=["auto", "bar", "lines", "quiet"])
    train.add_argument("--report", help="also write the report (JSON) here")
    onnx = commands.add_parser("import-onnx", help="an ONNX model as a taihu net config and checkpoint")
    onnx.add_argument("model")
    onnx.add_argument("out_dir")
    onnx.add_argument("--input-shape", action="append", default=[], metavar="NAME=C,H,W")
    onnx.add_argument("--seed", type=int, default=1)
    return parser


def _shapes(texts):
    shapes = {}
    for text in texts:
        name, _, dims = text.partition("=")
        try:
            shapes[name] = [int(d) for d in dims.split(",") if d]
        except ValueError:
            raise taihu.ConfigError("--input-shape={}: expected NAME=C,H,W".format(text)) from None
    return shapes


def main(argv=None):
    args = _parser().parse_args(argv)
    try:
        if args.command == "import-onnx":
            files = taihu.import_onnx(args.model, args.out_dir, input_shapes=_shapes(args.input_shape), seed=args.seed)
            for note in files["notes"]:
                print("note:", note, file=sys.stderr)
            print("{}: {} layers, {} learnable parameters -> {}, {}".format(
                files["net"], files["layers"], files["learnable_parameters"], files["config"], files["checkpoint"]))
            return 0
        report = taihu.train(args.config, *args.overrides, progress=args.progress, resume=args.resume)
    except taihu.ConfigError as e:
        print("taihu: {}".format(e), file=sys.stderr)
        return 2
    except taihu.Error as e:
        print("taihu: {}".format(e), file=sys.stderr)
        return 1
    if args.report:
        with open(args.report, "w") as f:
            json.dump(report, f, indent=1)
    figures = ", ".join("{} {}".format(k, report[k]) for k in ("iterations", "train_loss", "test_loss",
                                                                 "test_accuracy") if k in report)
    print("taihu: done ({})".format(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
