"""A model's reference point: the mean of its vectors for a fixed set of everyday texts.

The dense index takes sign codes around it (storage/vector_index.py). It is a property of the
model alone, so two brains with the same data build the same codes whatever their history,
and the codes never need rebuilding as the data changes.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from nexusbrain.embeddings.base import Embedder

TEXTS = (
    "The meeting was moved to Thursday afternoon.",
    "How do I reset my password?",
    "The results of the study were published last year.",
    "Add two cups of flour and stir until smooth.",
    "The server returned an error after the update.",
    "She walked to the station in the rain.",
    "Prices rose sharply in the first quarter.",
    "The patient reported pain in the left knee.",
    "Install the package and run the tests.",
    "The committee approved the new budget.",
    "What time does the museum open on Sunday?",
    "The river flooded the fields near the village.",
    "Our team fixed the bug in the login page.",
    "The contract ends at the end of the month.",
    "Birds migrate south before the winter.",
    "The function returns a list of names.",
    "He plays the piano every evening.",
    "The library has a large collection of old maps.",
    "Remember to back up your files regularly.",
    "The cells were grown in a nutrient solution.",
    "The train was delayed by twenty minutes.",
    "Sales of electric cars keep growing.",
    "The recipe calls for fresh basil and garlic.",
    "Please send me the report by Friday.",
    "The theory explains how the stars formed.",
    "Check the configuration file for typos.",
    "The children built a sandcastle on the beach.",
    "The law takes effect next January.",
    "Water boils at one hundred degrees.",
    "The app crashes when the network is slow.",
    "They signed the agreement after long talks.",
    "The painting hangs in the main hall.",
)


def reference_vector(embedder: Embedder) -> NDArray[np.float32]:
    """The mean of the embedder's vectors for TEXTS."""
    mean: NDArray[np.float32] = embedder.encode(list(TEXTS)).mean(axis=0).astype(np.float32)
    return mean
