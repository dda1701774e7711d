"""A Keras model trained the way keras.io's guides write it: compile, then model.fit.

Nothing here is written for gpubench: it reads Keras's own progress bar and
`Epoch i/n` lines. Offline: the data is generated (an MNIST-shaped random
classification problem), the weights are randomly initialised.
"""

import os

import keras
import numpy as np

epochs = int(os.environ.get("EPOCHS", "3"))
batch_size = int(os.environ.get("BATCH_SIZE", "128"))
samples = int(os.environ.get("SAMPLES", "6400"))

rng = np.random.default_rng(0)
x_train = rng.random((samples, 784), dtype=np.float32)
y_train = rng.integers(0, 10, samples)

model = keras.Sequential(
    [
        keras.Input(shape=(784,)),
        keras.layers.Dense(512, activation="relu"),
        keras.layers.Dropout(0.2),
        keras.layers.Dense(512, activation="relu"),
        keras.layers.Dense(10, activation="softmax"),
    ]
)
model.compile(optimizer="rmsprop", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
model.fit(x_train, y_train, batch_size=batch_size, epochs=epochs)
