"""perun's region API, answered by joulegate while ``joulegate monitor`` runs the app.

``joulegate monitor`` puts this folder first on the app's PYTHONPATH, so a script written for
perun runs unchanged and its regions reach joulegate's report::

    import perun

    @perun.monitor()                      # region named after the function
    def train(): ...

    @perun.monitor(region_name="step")    # or a name of its own
    def step(batch): ...

This module wins over an installed perun while the app runs under joulegate's monitor: perun's
own ``monitor`` would start perun's machinery inside the app (its backends, its sampling
process) and keep the regions there, so joulegate's report would hold none of them. Outside
``joulegate monitor`` this folder is not on the path and ``import perun`` finds perun itself.
"""

import functools
import os

import joulegate

__version__ = "0.9.1+joulegate"
__all__ = ["monitor", "perun", "register_callback", "register_live_callback", "__version__"]

_noticed = set()


def _notice(what, text):
    """One line on stderr, once per kind."""
    if what in _noticed:
        return
    _noticed.add(what)
    try:
        os.write(2, ("joulegate: %s\n" % text).encode("utf-8", "replace"))
    except OSError:
        pass


def monitor(region_name=None):
    """perun's region decorator: each call of the function is a region.

    ``@perun.monitor()``, ``@perun.monitor(region_name="x")``, ``@perun.monitor("x")`` and (a
    form perun itself does not take) ``@perun.monitor`` all work.
    """
    if callable(region_name):
        return joulegate.monitor(None)(region_name)
    return joulegate.monitor(region_name or None)


def perun(configuration_file="./.perun.ini", **conf_kwargs):
    """perun's whole-app decorator. Under ``joulegate monitor`` the app is measured already: the
    function's calls become a region (named ``app_name`` when given, else after the function),
    the settings given here are not applied (joulegate's configuration is), and a call returns
    the function's result."""

    def decorate(fn):
        region_fn = joulegate.monitor(conf_kwargs.get("app_name") or fn.__name__)(fn)

        @functools.wraps(fn)
        def run(*args, **kwargs):
            _notice(
                "perun",
                "@perun.perun under joulegate monitor: %s is measured as a region; "
                "its configuration is joulegate monitor's" % fn.__name__,
            )
            return region_fn(*args, **kwargs)

        return run

    return decorate


def register_callback(func):
    """perun calls these with its data tree after the run; joulegate has no such tree: ignored."""
    _notice(
        "callback",
        "perun.register_callback(%s) ignored: joulegate writes reports, it calls no Python "
        "callbacks" % getattr(func, "__name__", "?"),
    )


def register_live_callback(obj, id):
    """perun calls these after every sample in its sampling process: ignored, as above."""
    _notice(
        "live",
        "perun.register_live_callback(%s) ignored: joulegate calls no Python callbacks" % id,
    )
