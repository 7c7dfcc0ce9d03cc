"""PyTorch Lightning on mlu: an ``Accelerator`` registered as "mlu".

Note [Lightning's mlu accelerator]
Lightning (2.6) ships accelerators for cpu, cuda, mps and xla only; its documented way to add a device is an
``Accelerator`` subclass registered in ``AcceleratorRegistry``. Once ``lightning.pytorch`` (or the standalone
``pytorch_lightning``) has loaded its trainer, torch_mlu registers :class:`MLUAccelerator` there
(:mod:`torch_mlu._after_import`, recorded in :mod:`torch_mlu.patches`), so an unmodified script says
``Trainer(accelerator="mlu", devices=2, strategy="ddp")``. What the rest of Lightning needs already holds:
DDP's process group takes ``cncl`` from ``torch.distributed``'s default backend for the device, DDP gets the
rank's device index, and the launcher's child processes import torch_mlu through PyTorch's backend autoload.

Three spots of Lightning assume cuda for any accelerator but cpu and mps; each is fitted for mlu only:
- its accelerator connector builds the ``MixedPrecision`` plugin of ``precision="16-mixed"`` / ``"bf16-mixed"``
  for "cuda" (autocast on a device this process does not have, a CUDA grad scaler): :meth:`MLUAccelerator.setup`
  points it at "mlu" (and a ``torch.amp.GradScaler("mlu")`` for fp16) before the first step;
- with one device it picks ``SingleDeviceStrategy("cpu")``: ``_AcceleratorConnector._choose_strategy`` is
  wrapped to put that strategy on the mlu device the accelerator parsed;
- ``DDPStrategy._setup_model`` builds DDP inside ``torch.cuda.stream(torch.cuda.Stream())``: on mlu, inside an
  mlu side stream instead.
Both wrappers are recorded in :mod:`torch_mlu.patches` and leave every other device to Lightning's code. Devices
are given as Lightning gives GPUs: a count (-1: all), a list of indices, or a string of either ("2", "0,1").
"""

import torch

_PACKAGES = ("lightning.pytorch", "pytorch_lightning")
_classes = {}


def _parse_devices(devices):
    """Lightning's device argument as a list of mlu indices, checked against the devices this process sees."""
    count = torch.mlu.device_count()
    if isinstance(devices, str):
        text = devices.strip()
        devices = [int(x) for x in text.split(",") if x.strip()] if "," in text else int(text)
    if isinstance(devices, int):
        if devices == -1:
            devices = count
        if devices < 0:
            raise ValueError(f"mlu devices must be a count >= 0, -1 (all) or a list of indices, got {devices}")
        if devices > count:
            raise ValueError(f"asked for {devices} mlu devices, but this process sees {count} (MLU_VISIBLE_DEVICES, "
                             "TORCH_MLU_DEVICE_COUNT)")
        return list(range(devices)) or None
    indices = list(devices)
    bad = [i for i in indices if not 0 <= int(i) < count]
    if bad:
        raise ValueError(f"mlu device indices {bad} do not exist: this process sees {count} mlu devices")
    return [int(i) for i in indices] or None


def accelerator_class(package="lightning.pytorch"):
    """The mlu Accelerator for `package` ("lightning.pytorch" or "pytorch_lightning"), made on first use."""
    if package in _classes:
        return _classes[package]
    import importlib
    accelerators = importlib.import_module(f"{package}.accelerators")  # loaded: its import is what registers

    class MLUAccelerator(accelerators.Accelerator):
        """Accelerator for mlu devices (Note [Lightning's mlu accelerator])."""

        def setup_device(self, device):
            if device.type != "mlu":
                raise ValueError(f"the mlu accelerator was given {device}, not an mlu device")
            torch.mlu.set_device(device)

        def setup(self, trainer):
            precision = importlib.import_module(f"{package}.plugins.precision")  # not while Lightning loads
            plugin = trainer.strategy.precision_plugin
            if isinstance(plugin, precision.MixedPrecision) and plugin.device == "cuda":
                plugin.device = "mlu"
                if plugin.scaler is not None:
                    plugin.scaler = torch.amp.GradScaler("mlu")

        def get_device_stats(self, device):
            return torch.mlu.memory_stats(device)

        def teardown(self):
            torch.mlu.empty_cache()

        @staticmethod
        def parse_devices(devices):
            return _parse_devices(devices)

        @staticmethod
        def get_parallel_devices(devices):
            return [torch.device("mlu", i) for i in devices]

        @staticmethod
        def auto_device_count():
            return torch.mlu.device_count()

        @staticmethod
        def is_available():
            return torch.mlu.is_available()

        @staticmethod
        def name():
            return "mlu"

        @classmethod
        def register_accelerators(cls, accelerator_registry):
            accelerator_registry.register(cls.name(), cls, description=cls.__name__)

    MLUAccelerator.__module__ = __name__
    _classes[package] = MLUAccelerator
    return MLUAccelerator


def __getattr__(name):
    if name == "MLUAccelerator":  # lightning's, the unified package's (`import lightning`)
        return accelerator_class("lightning.pytorch")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _install(package):
    """Registers the accelerator and fits Lightning's two cuda-only spots for mlu (the Note), in `package`."""
    import importlib

    from . import patches

    reason = "Trainer(accelerator='mlu') (Note [Lightning's mlu accelerator])"
    registry = importlib.import_module(f"{package}.accelerators").AcceleratorRegistry
    cls = accelerator_class(package)
    if "mlu" not in registry:
        with patches.recording_items(registry, reason, label=f"{package}.accelerators.AcceleratorRegistry"):
            cls.register_accelerators(registry)

    connector = importlib.import_module(f"{package}.trainer.connectors.accelerator_connector")._AcceleratorConnector
    strategies = importlib.import_module(f"{package}.strategies")
    choose_strategy = connector._choose_strategy

    def _choose_strategy(self):
        strategy = choose_strategy(self)
        if isinstance(strategy, strategies.SingleDeviceStrategy) and strategy.root_device.type == "cpu" and \
                all(d.type == "mlu" for d in self._parallel_devices or []) and self._parallel_devices:
            return strategies.SingleDeviceStrategy(device=self._parallel_devices[0])
        return strategy

    patches.set_attr(connector, "_choose_strategy", _choose_strategy, reason)

    ddp = strategies.DDPStrategy
    setup_model = ddp._setup_model

    def _setup_model(self, model):
        if self.root_device.type != "mlu":
            return setup_model(self, model)
        from torch.nn.parallel import DistributedDataParallel
        with torch.mlu.stream(torch.mlu.Stream()):  # Lightning's side stream for DDP's set-up, on mlu
            return DistributedDataParallel(module=model, device_ids=self.determine_ddp_device_ids(),
                                           **self._ddp_kwargs)

    patches.set_attr(ddp, "_setup_model", _setup_model, reason)


def register_when_lightning_loads() -> None:
    from ._after_import import after_import

    for package in _PACKAGES:
        # Its trainer module is the last to load of those _install touches (it imports the others).
        after_import(f"{package}.trainer.trainer", lambda package=package: _install(package),
                     f"registers the mlu accelerator with {package}")
