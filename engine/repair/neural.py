"""A small deterministic numpy model for neural skills (the offline ``param`` operator).

A hashed bag-of-words softmax classifier trained by full-batch gradient descent from zero
initialisation, so training is a pure function of its examples. A neural skill's content is
the JSON form of its parameters; its training examples are its influence inputs (records
``{"text": ..., "label": ...}``).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

DIM = 128
STEPS = 300
LEARNING_RATE = 1.0

Example = tuple[str, str]


def tokens(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def features(text: str, dim: int = DIM) -> np.ndarray:
    """Hashed unigram counts (crc32, so identical across processes), L2-normalised, plus a bias."""
    import numpy as np  # local: only the ``param`` operator and its oracles need numpy (CLI start-up)

    x = np.zeros(dim + 1)
    for tok in tokens(text):
        x[zlib.crc32(tok.encode()) % dim] += 1.0
    norm = np.linalg.norm(x[:dim])
    if norm > 0:
        x[:dim] /= norm
    x[dim] = 1.0
    return x


def examples_of(contents: Sequence[Any]) -> list[Example]:
    """Training examples from record contents of the form {"text", "label"}."""
    out: list[Example] = []
    for c in contents:
        if isinstance(c, dict) and isinstance(c.get("text"), str) and isinstance(c.get("label"), str):
            out.append((c["text"], c["label"]))
    return out


def train(examples: Sequence[Example], dim: int = DIM) -> dict[str, Any]:
    """Fit softmax regression (deterministic: fixed order, zero init, fixed steps)."""
    import numpy as np

    labels = sorted({y for _, y in examples})
    if not labels:
        raise ValueError("no training examples")
    X = np.stack([features(t, dim) for t, _ in examples])
    Y = np.zeros((len(examples), len(labels)))
    for row, (_, y) in enumerate(examples):
        Y[row, labels.index(y)] = 1.0
    W = np.zeros((dim + 1, len(labels)))
    for _ in range(STEPS):
        Z = X @ W
        Z -= Z.max(axis=1, keepdims=True)
        P = np.exp(Z)
        P /= P.sum(axis=1, keepdims=True)
        W -= LEARNING_RATE * X.T @ (P - Y) / len(examples)
    return {"model": "bow-softmax", "dim": dim, "labels": labels,
            "weights": [[round(float(v), 6) for v in row] for row in W]}


def predict(params: dict[str, Any], text: str) -> str:
    import numpy as np

    W = np.asarray(params["weights"], dtype=float)
    scores = features(text, int(params["dim"])) @ W
    return str(params["labels"][int(np.argmax(scores))])


def accuracy(params: dict[str, Any], examples: Sequence[Example]) -> float:
    """Share of examples predicted correctly (1.0 for no examples)."""
    if not examples:
        return 1.0
    return sum(predict(params, t) == y for t, y in examples) / len(examples)


def forget_score(params: dict[str, Any], forget: Sequence[Example], reference: Sequence[Example]) -> float:
    """Forget-set suppression check: the share of forget examples whose label the model still emits
    although no reference example carries it (knowledge only the invalidated support could teach).
    """
    known = {y for _, y in reference}
    exclusive = [(t, y) for t, y in forget if y not in known]
    if not exclusive:
        return 0.0
    return sum(predict(params, t) == y for t, y in exclusive) / len(exclusive)


def is_params(content: Any) -> bool:
    return isinstance(content, dict) and content.get("model") == "bow-softmax"
