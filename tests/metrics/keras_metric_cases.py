"""Metric cases shared by the Keras fixture generator and the parity test.

Each case: (metric class name, constructor kwargs, input kind). ``inputs(kind, seed)``
builds two batches ``(y_true, y_pred, sample_weight)`` deterministically with NumPy, so
the generator (run once under Keras) and the test see identical data.
"""
import numpy as np

CASES = {
    "mape": ("MeanAbsolutePercentageError", {}, "reg"),
    "msle": ("MeanSquaredLogarithmicError", {}, "pos"),
    "rmse": ("RootMeanSquaredError", {}, "reg"),
    "cosine": ("CosineSimilarity", {}, "reg"),
    "logcosh": ("LogCoshError", {}, "reg"),
    "r2": ("R2Score", {}, "reg"),
    "r2_none": ("R2Score", {"class_aggregation": None}, "reg"),
    "r2_var": ("R2Score", {"class_aggregation": "variance_weighted_average"}, "reg"),
    "r2_adj": ("R2Score", {"num_regressors": 2}, "reg"),
    "kld": ("KLDivergence", {}, "prob"),
    "poisson": ("Poisson", {}, "pos"),
    "bce": ("BinaryCrossentropy", {}, "bin"),
    "bce_logits": ("BinaryCrossentropy", {"from_logits": True, "label_smoothing": 0.1},
                   "bin_logits"),
    "cce": ("CategoricalCrossentropy", {"label_smoothing": 0.2}, "onehot_prob"),
    "scce_logits": ("SparseCategoricalCrossentropy", {"from_logits": True}, "sparse"),
    "hinge": ("Hinge", {}, "bin"),
    "squared_hinge": ("SquaredHinge", {}, "bin"),
    "categorical_hinge": ("CategoricalHinge", {}, "onehot"),
    "precision_thresholds": ("Precision", {"thresholds": [0.3, 0.7]}, "bin"),
    "recall_top_k": ("Recall", {"top_k": 2}, "onehot"),
    "precision_class_id": ("Precision", {"class_id": 1}, "onehot"),
    "recall_class_top": ("Recall", {"top_k": 2, "class_id": 3}, "onehot"),
    "p_at_r": ("PrecisionAtRecall", {"recall": 0.6}, "bin1"),
    "r_at_p": ("RecallAtPrecision", {"precision": 0.7, "num_thresholds": 50}, "bin1"),
    "sens_at_spec": ("SensitivityAtSpecificity", {"specificity": 0.5}, "bin1"),
    "spec_at_sens": ("SpecificityAtSensitivity", {"sensitivity": 0.4}, "bin1"),
    "spec_at_sens_class": ("SpecificityAtSensitivity", {"sensitivity": 0.5, "class_id": 2},
                           "onehot"),
    "f1_none": ("F1Score", {}, "onehot"),
    "f1_micro": ("F1Score", {"average": "micro", "threshold": 0.5}, "multihot"),
    "f1_macro": ("F1Score", {"average": "macro", "threshold": 0.4}, "multihot"),
    "f1_weighted": ("F1Score", {"average": "weighted"}, "onehot"),
    "fbeta_weighted": ("FBetaScore", {"average": "weighted", "beta": 2.0, "threshold": 0.5},
                       "multihot"),
    "top_k": ("TopKCategoricalAccuracy", {"k": 3}, "onehot"),
    "sparse_top_k": ("SparseTopKCategoricalAccuracy", {"k": 2}, "sparse"),
    "mean_iou": ("MeanIoU", {"num_classes": 4}, "labels"),
    "mean_iou_ignore": ("MeanIoU", {"num_classes": 4, "ignore_class": 0}, "labels"),
    "iou": ("IoU", {"num_classes": 4, "target_class_ids": [0, 2]}, "labels"),
    "iou_float": ("IoU", {"num_classes": 4, "target_class_ids": [1, 3], "dtype": "float32"},
                  "labels_float"),
    "binary_iou": ("BinaryIoU", {"target_class_ids": [0, 1], "threshold": 0.4}, "bin1_int"),
    "one_hot_iou": ("OneHotIoU", {"num_classes": 5, "target_class_ids": [0, 1, 4]},
                    "onehot_int"),
    "one_hot_mean_iou": ("OneHotMeanIoU", {"num_classes": 5}, "onehot_int"),
    "auc_roc": ("AUC", {}, "bin"),
    "auc_pr": ("AUC", {"curve": "PR"}, "bin"),
    "auc_minoring": ("AUC", {"summation_method": "minoring", "num_thresholds": 50}, "bin1"),
    "auc_majoring_pr": ("AUC", {"curve": "PR", "summation_method": "majoring"}, "bin1"),
    "auc_multi": ("AUC", {"multi_label": True, "num_labels": 3}, "bin"),
    "auc_thresholds": ("AUC", {"thresholds": [0.2, 0.5, 0.8]}, "bin"),
    "auc_logits": ("AUC", {"from_logits": True}, "bin_logits"),
    "binary_accuracy": ("BinaryAccuracy", {"threshold": 0.3}, "bin"),
    "categorical_accuracy": ("CategoricalAccuracy", {}, "onehot"),
    "sparse_categorical_accuracy": ("SparseCategoricalAccuracy", {}, "sparse"),
    "mean_squared_error": ("MeanSquaredError", {}, "reg"),
    "mean_absolute_error": ("MeanAbsoluteError", {}, "reg"),
    "true_positives": ("TruePositives", {}, "bin"),
    "false_positives": ("FalsePositives", {"thresholds": [0.1, 0.5, 0.9]}, "bin"),
    "true_negatives": ("TrueNegatives", {"thresholds": 0.3}, "bin1"),
    "false_negatives": ("FalseNegatives", {}, "bin1"),
    "pearson": ("PearsonCorrelation", {}, "reg"),
    "concordance": ("ConcordanceCorrelation", {}, "reg"),
}


def _batch(kind: str, rng: np.random.Generator, n: int = 12):
    f = np.float32
    sw = rng.uniform(0.0, 2.0, n).astype(f)
    if kind == "reg":
        return rng.normal(size=(n, 3)).astype(f), rng.normal(size=(n, 3)).astype(f), sw
    if kind == "pos":
        return (rng.poisson(2.0, (n, 3)).astype(f), rng.uniform(0.1, 4, (n, 3)).astype(f), sw)
    if kind in ("prob", "onehot_prob"):
        p = rng.uniform(size=(n, 4)).astype(f)
        p /= p.sum(-1, keepdims=True)
        if kind == "prob":
            t = rng.uniform(size=(n, 4)).astype(f)
            return t / t.sum(-1, keepdims=True), p, sw
        return np.eye(4, dtype=f)[rng.integers(0, 4, n)], p, sw
    if kind in ("bin", "bin_logits"):
        t = rng.integers(0, 2, (n, 3)).astype(f)
        p = rng.normal(size=(n, 3)) if kind == "bin_logits" else rng.uniform(size=(n, 3))
        return t, p.astype(f), sw
    if kind in ("bin1", "bin1_int"):
        t = rng.integers(0, 2, 4 * n).astype(f)
        w = rng.integers(0, 3, 4 * n).astype(np.int32) if kind == "bin1_int" else \
            rng.uniform(0, 2, 4 * n).astype(f)
        return t, rng.uniform(size=4 * n).astype(f), w
    if kind in ("onehot", "onehot_int"):
        t = np.eye(5, dtype=f)[rng.integers(0, 5, n)]
        w = rng.integers(0, 3, n).astype(np.int32) if kind == "onehot_int" else sw
        return t, rng.uniform(size=(n, 5)).astype(f), w
    if kind == "multihot":
        return rng.integers(0, 2, (n, 4)).astype(f), rng.uniform(size=(n, 4)).astype(f), sw
    if kind == "sparse":
        return rng.integers(0, 5, n).astype(np.int32), rng.normal(size=(n, 5)).astype(f), sw
    if kind in ("labels", "labels_float"):
        t = rng.integers(0, 4, (n, 2)).astype(np.int32)
        p = rng.integers(0, 4, (n, 2)).astype(np.int32)
        w = rng.uniform(0, 2, (n, 2)).astype(f) if kind == "labels_float" else \
            rng.integers(0, 3, (n, 2)).astype(np.int32)
        return t, p, w
    raise ValueError(kind)


def inputs(kind: str, seed: int):
    """Two batches; the first without sample weights, the second with them."""
    rng = np.random.default_rng(seed)
    (t1, p1, _), (t2, p2, w2) = _batch(kind, rng), _batch(kind, rng)
    return [(t1, p1, None), (t2, p2, w2)]
