"""taihu: actor-based training of deep networks, from Python.

    import taihu
    report = taihu.train("config/lenet-fashion.ini", epochs=2, data__limit_train=960)
    net = taihu.Net.from_config("nets/lenet.ini", batch=64)
    outputs = net.forward(data=x, label=y); net.backward(); net.grads()["conv1/weight"]
    ckpt = taihu.load_checkpoint("out/lenet-fashion/lenet-fashion.ckpt")

The training run is taihu-train's, with the same config files and overrides;
errors are taihu.ConfigError (a ValueError), taihu.NumericError (an
ArithmeticError) or taihu.Error.
"""

import json as _json

from ._taihu import (ConfigError, Error, Net, NumericError, blas_kernel, load_checkpoint,  # noqa: F401
                     save_checkpoint)
from ._taihu import _train

__all__ = ["train", "Net", "load_checkpoint", "save_checkpoint", "blas_kernel", "Error", "ConfigError",
           "NumericError"]


def _override(key, value):
    """A keyword argument as a config override: section__key=value is [section] key."""
    if isinstance(value, bool):
        value = "true" if value else "false"
    return "{}={}".format(key.replace("__", "."), value)


def train(config_file, *overrides, progress="auto", resume=None, **settings):
    """Trains what the config file describes, as taihu-train does; returns the report as a dict.

    overrides: "key=value" strings, as on taihu-train's command line ("solver.base_lr=0.05");
    settings: the same as keyword arguments, with "__" for the section dot (solver__base_lr=0.05).
    progress: "auto", "bar", "lines" or "quiet"; resume: a checkpoint to continue from.
    """
    for o in overrides:
        if not isinstance(o, str) or "=" not in o:
            raise ConfigError("train: an override is written 'key=value', not {!r}".format(o))
    items = list(overrides) + [_override(k, v) for k, v in settings.items()]
    return _json.loads(_train(str(config_file), items, progress, "" if resume is None else str(resume)))
