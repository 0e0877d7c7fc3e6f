"""taihu: actor-based training of deep networks, from Python.

    import taihu
    report = taihu.train("config/lenet-fashion.ini", epochs=2, data__limit_train=960)

    trainer = taihu.Trainer("config/lenet-fashion.ini", epochs=2,
                            on_iteration=lambda r: print(r["iteration"], r["loss"]),
                            on_epoch=lambda r: print(r["epoch"], r["accuracy"]))
    report = trainer.fit()          # Ctrl-C: stops cleanly, checkpoint where the run stands
    scores = trainer.evaluate()     # the checkpoint's weights on the test (and dev) set

    net = taihu.Net.from_config("config/nets/lenet.ini", batch=64)
    outputs = net.forward(data=x, label=y); net.backward(); net.grads()["conv1/weight"]
    ckpt = taihu.load_checkpoint("out/lenet-fashion/lenet-fashion.ckpt")
    files = taihu.import_onnx("resnet50.onnx", "out/resnet50")   # as taihu-convert onnx: .ini + .ckpt

The training run is taihu-train's, with the same config files and overrides;
errors are taihu.ConfigError (a ValueError), taihu.NumericError (an
ArithmeticError) or taihu.Error.
"""

import json as _json
import os as _os

from ._taihu import (ConfigError, Error, GraphData, Net, NumericError, blas_kernel,  # noqa: F401
                     import_onnx, load_checkpoint, save_checkpoint)
from ._taihu import _Run

__all__ = ["train", "Trainer", "GraphData", "Net", "load_checkpoint", "save_checkpoint", "import_onnx", "blas_kernel",
           "Error", "ConfigError", "NumericError"]


def _override(key, value):
    """A keyword argument as a config override: section__key=value is [section] key."""
    if isinstance(value, bool):
        value = "true" if value else "false"
    return "{}={}".format(key.replace("__", "."), value)


def _overrides(strings, settings):
    for o in strings:
        if not isinstance(o, str) or "=" not in o:
            raise ConfigError("an override is written 'key=value', not {!r}".format(o))
    return list(strings) + [_override(k, v) for k, v in settings.items()]


class Trainer:
    """A training run of a config file, as taihu-train runs it, with callbacks.

    overrides: "key=value" strings, as on taihu-train's command line ("solver.base_lr=0.05");
    settings: the same as keyword arguments, with "__" for the section dot (solver__base_lr=0.05).
    progress: "auto", "bar", "lines" or "quiet".
    on_iteration(record): after every iteration, with the metrics file's "train" figures
        (epoch, iteration, loss, lr, images_per_second or samples_per_second);
    on_epoch(record): after every evaluated epoch, with the metrics file's "test" (nets) or
        "eval" (dynamic models) record.
    data: a taihu.GraphData, the input graphs of the config's dynamic model ([model]), in place
        of a [data] section (the run's [data] source is then "memory").
    Callbacks run on the calling thread while the run goes on (it does not wait for them); one may
    call stop(). A callback that raises stops the run, and fit() raises its exception once the run
    has stopped.
    """

    def __init__(self, config_file, *overrides, progress="auto", on_iteration=None, on_epoch=None, data=None,
                 **settings):
        self.config_file = str(config_file)
        self.overrides = _overrides(overrides, settings)
        if data is not None and not isinstance(data, GraphData):
            raise ConfigError("Trainer: data is a taihu.GraphData, not {}".format(type(data).__name__))
        if data is not None and not any(o.startswith("data.source=") for o in self.overrides):
            self.overrides.append("data.source=memory")
        self.data = data
        self.progress = progress
        self.on_iteration = on_iteration
        self.on_epoch = on_epoch
        self.report = None  # the last fit()'s, as a dict
        self._run = None

    def fit(self, resume=None):
        """Trains; returns the report as a dict (report["stopped"]: whether stop() ended it early).

        resume: a checkpoint of the same configuration to continue from (bit for bit).
        Ctrl-C stops the run after the iteration in flight, writes a checkpoint where it stands
        ([output] checkpoint; fit(resume=...) continues from it), then raises KeyboardInterrupt.
        """
        self.report = _json.loads(self._drive("" if resume is None else str(resume), False))
        return self.report

    def evaluate(self, checkpoint=None):
        """The test (and dev) figures of a checkpoint's weights, as a dict {"test": {...}, "dev": {...}}.

        checkpoint: default, the one the config's run writes ([output] dir / checkpoint).
        """
        if checkpoint is None:
            checkpoint = self.checkpoint_path()
            if not _os.path.exists(checkpoint):
                raise ConfigError("evaluate: no checkpoint at '{}' yet: fit() first, or pass checkpoint="
                                  .format(checkpoint))
        return _json.loads(self._drive(str(checkpoint), True))

    def stop(self):
        """Stops the run after the iteration in flight when the request arrives (from a callback or
        another thread), with a checkpoint where it stands; fit() then returns its report."""
        if self._run is not None:
            self._run.stop()

    def checkpoint_path(self):
        """The checkpoint file this configuration's run writes."""
        from ._taihu import _checkpoint_path
        return _checkpoint_path(self.config_file, self.overrides)

    def _drive(self, resume, evaluate_only):
        run = _Run(self.config_file, self.overrides, self.progress, resume, evaluate_only, self.data)
        self._run = run
        try:
            while not run.done():
                for record in run.poll(0.1):
                    self._dispatch(record)
        except BaseException:  # a callback's exception or KeyboardInterrupt: stop cleanly, then raise
            run.stop()
            while not run.done():
                run.poll(0.1)
            run.result()  # the run's own error, if it failed meanwhile, takes precedence
            raise
        finally:
            self._run = None
        return run.result()

    def _dispatch(self, record):
        kind = record.get("type")
        if kind == "train":
            if self.on_iteration is not None:
                self.on_iteration(record)
        elif self.on_epoch is not None:
            self.on_epoch(record)


def train(config_file, *overrides, progress="auto", resume=None, **settings):
    """Trains what the config file describes, as taihu-train does; returns the report as a dict.

    overrides: "key=value" strings, as on taihu-train's command line ("solver.base_lr=0.05");
    settings: the same as keyword arguments, with "__" for the section dot (solver__base_lr=0.05).
    progress: "auto", "bar", "lines" or "quiet"; resume: a checkpoint to continue from.
    """
    return Trainer(config_file, *overrides, progress=progress, **settings).fit(resume=resume)
