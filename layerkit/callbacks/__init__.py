"""Training callbacks: hooks called by ``Model.fit``/``evaluate``/``predict``.

``fit`` always adds a :class:`History` (returned by ``fit``) and, when ``verbose`` is
not 0, a :class:`ProgbarLogger`. Callbacks see ``self.model`` and ``self.params``
(``{'epochs', 'steps', 'verbose'}``) and may set ``self.model.stop_training = True``.

One family per module, as in Keras 3 (``keras/src/callbacks/``).
"""
from layerkit.callbacks.backup_and_restore import BackupAndRestore
from layerkit.callbacks.callback import Callback
from layerkit.callbacks.callback_list import CallbackList
from layerkit.callbacks.csv_logger import CSVLogger
from layerkit.callbacks.early_stopping import EarlyStopping
from layerkit.callbacks.history import History
from layerkit.callbacks.lambda_callback import LambdaCallback
from layerkit.callbacks.learning_rate_scheduler import LearningRateScheduler
from layerkit.callbacks.model_checkpoint import ModelCheckpoint
from layerkit.callbacks.monitor_callback import MonitorCallback
from layerkit.callbacks.progbar_logger import ProgbarLogger
from layerkit.callbacks.reduce_lr_on_plateau import ReduceLROnPlateau
from layerkit.callbacks.tensorboard import TensorBoard
from layerkit.callbacks.terminate_on_nan import TerminateOnNaN
from layerkit.utils.progbar import Progbar

__all__ = ["Callback", "CallbackList", "History", "ProgbarLogger", "Progbar", "EarlyStopping",
           "ModelCheckpoint", "LearningRateScheduler", "CSVLogger", "TerminateOnNaN",
           "LambdaCallback", "TensorBoard", "ReduceLROnPlateau", "MonitorCallback",
           "BackupAndRestore"]
