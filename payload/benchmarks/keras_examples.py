"""The epoch benchmarks of seed 000 (bilstm-sentiment) and seed 002 (Keras' examples: mnist_mlp.py,
mnist_cnn.py, cifar10_cnn.py, imdb_bidirectional_lstm.py, lstm_text_generation.py, imdb_fasttext.py),
each a loader and a model of the study's; data is synthetic at the study's sizes unless ``--data`` says.

Keras 3 has no CuDNNLSTM: its LSTM takes the cuDNN kernel on a GPU with the defaults kept, as here.
"""

from __future__ import annotations

from functools import partial

from payload import datasets, frameworks
from payload.benchmarks.base import Benchmark, cap, compiled, make_data, n_synthetic, output_layer, rng_for


def arrays(source, params: dict, read, full: int, val: int, shape: tuple, classes: int) -> tuple:
    """(x, y, x_val, y_val): the dataset `read` reads, or synthetic images of `shape` at its sizes."""
    if source.mode == "synthetic":
        return synthetic(datasets.synthetic_images, params, full, val, shape, classes)
    (x, y), (xv, yv) = read(source)
    return x, y, xv, yv


def synthetic(make, params: dict, full: int, val: int, *shape) -> tuple:
    """(x, y, x_val, y_val) from `make` (datasets.synthetic_images / _sequences) at the study's sizes, or
    the `samples` / `val_samples` caps."""
    rng = rng_for(params)
    x, y = make(rng, n_synthetic(params, full), *shape)
    return (x, y, *make(rng, params.get("val_samples") or val, *shape))


def holdout(x, y, fraction: float, rng):
    """Shuffle, then keep the last ``fraction`` as held-out data (seed 000: 90/10)."""
    idx = rng.permutation(len(y))
    x, y = x[idx], y[idx]
    cut = max(1, int(round(len(y) * fraction)))
    return x[:-cut], y[:-cut], x[-cut:], y[-cut:]


def sequential(shape, layers: list, units: int, activation: str, optimizer, loss=None, dtype=None):
    """Input, `layers`, a float32 output layer, compiled."""
    keras = frameworks.keras()
    model = keras.Sequential([keras.Input(shape, dtype=dtype), *layers, output_layer(units, activation)])
    return compiled(model, optimizer, *([loss] if loss else []))


# --- bilstm-sentiment (seed 000) and imdb-bilstm (seed 002): one model -----------------------------------

SYNTHETIC_MAXLEN = 40


def bilstm_classifier(maxlen: int, vocabulary: int):
    """Embedding 128 -> bidirectional LSTM 64 -> dropout 0.5 -> sigmoid, adam: seed 000's model and
    Keras' imdb_bidirectional_lstm.py (seed 002)."""
    L = frameworks.keras().layers
    layers = [L.Embedding(vocabulary, 128), L.Bidirectional(L.LSTM(64)), L.Dropout(0.5)]
    return sequential((maxlen,), layers, 1, "sigmoid", "adam", "binary_crossentropy", "int32")


def load_tweets(source, params, global_batch):
    """Thinknook's tweets (the study's clean_str tokens, vocabulary capped at ``max_features`` where the
    study kept every word, padded to the longest tweet unless ``maxlen``); 90/10 after a shuffle."""
    rng = rng_for(params)
    if source.mode == "synthetic":
        n = n_synthetic(params, 1_578_627)
        x, y = datasets.synthetic_sequences(rng, n, params["maxlen"] or SYNTHETIC_MAXLEN, params["max_features"])
        vocab = params["max_features"]
    else:
        texts, y = datasets.read_tweets(source)
        x, vocab = datasets.tokenize_tweets(texts, params["max_features"], params["maxlen"])
    params["_vocabulary"], params["_maxlen"] = int(vocab), int(x.shape[1])
    x, y, xv, yv = holdout(x, y, 0.1, rng)
    return make_data(x, y, xv, yv, params, source, info={"vocabulary": int(vocab), "maxlen": int(x.shape[1])})


def build_tweets(params):
    maxlen = params.get("_maxlen") or params["maxlen"] or SYNTHETIC_MAXLEN
    return bilstm_classifier(maxlen, params.get("_vocabulary") or params["max_features"])


def load_imdb(source, params, global_batch):
    maxlen, vocab = params["maxlen"], params["max_features"]
    if source.mode == "synthetic":
        x, y, xv, yv = synthetic(datasets.synthetic_sequences, params, 25000, 25000, maxlen, vocab)
    else:
        (x, y), (xv, yv) = datasets.read_imdb(source, num_words=vocab)
        x, xv = datasets.pad_sequences(x, maxlen), datasets.pad_sequences(xv, maxlen)
    return make_data(x, y, xv, yv, params, source)


# --- mnist-mlp and mnist-cnn: one dataset, reshaped ----------------------------------------------------------


def load_mnist(shape: tuple, source, params, global_batch):
    """MNIST's 28x28 images (mnist.npz / Keras download, or synthetic of that shape and 10 classes) as `shape`."""
    x, y, xv, yv = arrays(source, params, datasets.read_mnist, 60000, 10000, (28, 28), 10)
    return make_data(x.reshape(len(x), *shape), y, xv.reshape(len(xv), *shape), yv, params, source)


def build_mnist_mlp(params):
    keras = frameworks.keras()
    L, hidden = keras.layers, params["hidden"]
    layers = [L.Rescaling(1 / 255.0), L.Dense(hidden, activation="relu"), L.Dropout(0.2)]
    layers += [L.Dense(hidden, activation="relu"), L.Dropout(0.2)]
    return sequential((784,), layers, 10, "softmax", keras.optimizers.RMSprop())


def build_mnist_cnn(params):
    keras = frameworks.keras()
    L = keras.layers
    layers = [L.Rescaling(1 / 255.0), L.Conv2D(32, 3, activation="relu"), L.Conv2D(64, 3, activation="relu")]
    layers += [L.MaxPooling2D(2), L.Dropout(0.25), L.Flatten(), L.Dense(128, activation="relu"), L.Dropout(0.5)]
    # Keras 2's Adadelta default lr was 1.0; Keras 3's 0.001 would barely train
    return sequential((28, 28, 1), layers, 10, "softmax", keras.optimizers.Adadelta(learning_rate=1.0))


# --- cifar10-cnn ---------------------------------------------------------------------------------------------


def load_cifar10(source, params, global_batch):
    return make_data(*arrays(source, params, datasets.read_cifar10, 50000, 10000, (32, 32, 3), 10), params, source)


def build_cifar10(params):
    """The example's ImageDataGenerator (10% shifts, flips) as preprocessing layers: on the GPU, active
    only while training."""
    keras = frameworks.keras()
    L = keras.layers
    aug = [L.RandomTranslation(0.1, 0.1, fill_mode="nearest"), L.RandomFlip("horizontal")]
    layers = [L.Rescaling(1 / 255.0), *(aug if params["augmentation"] else [])]
    for filters in (32, 64):
        layers += [L.Conv2D(filters, 3, padding="same", activation="relu"), L.Conv2D(filters, 3, activation="relu")]
        layers += [L.MaxPooling2D(2), L.Dropout(0.25)]
    layers += [L.Flatten(), L.Dense(512, activation="relu"), L.Dropout(0.5)]
    opt = keras.optimizers.RMSprop(learning_rate=keras.optimizers.schedules.InverseTimeDecay(1e-4, 1, 1e-6))
    return sequential((32, 32, 3), layers, 10, "softmax", opt)


# --- text-lstm -----------------------------------------------------------------------------------------------


def load_text(source, params, global_batch):
    """40-character windows (step 3) predicting the next character, held as ids and one-hot encoded per
    batch in tf.data (the example's one-hot tensor is GBs at full scale); 10% held out."""
    np = frameworks.numpy()
    tf = frameworks.tensorflow()
    maxlen = params["maxlen"]
    if source.mode == "synthetic":
        rng = rng_for(params)
        n = n_synthetic(params, 200_000)
        text_ids = np.clip(rng.zipf(1.5, size=n * params["step"] + maxlen + 1) - 1, 0, params["chars"] - 1)
        text = "".join(chr(32 + int(i)) for i in text_ids)
    else:
        text = datasets.read_nietzsche(source)
    chars = sorted(set(text))
    index = {ch: i for i, ch in enumerate(chars)}
    ids = np.fromiter((index[ch] for ch in text), dtype=np.int32, count=len(text))
    starts = np.arange(0, len(text) - maxlen, params["step"])
    nchars = params["_chars"] = len(chars)
    x, y, xv, yv = holdout(
        ids[starts[:, None] + np.arange(maxlen)[None, :]], ids[starts + maxlen], 0.1, rng_for(params)
    )

    def one_hot(xb, yb):
        return tf.one_hot(xb, nchars), yb

    return make_data(x, y, xv, yv, params, source, transform=one_hot, info={"chars": nchars})


def build_text(params):
    keras = frameworks.keras()
    nchars = params.get("_chars") or params["chars"]
    opt = keras.optimizers.RMSprop(learning_rate=0.01)
    return sequential((params["maxlen"], nchars), [keras.layers.LSTM(params["units"])], nchars, "softmax", opt)


# --- imdb-fasttext -------------------------------------------------------------------------------------------


def add_ngrams(train, test, max_features: int, ngram_range: int):
    """The example's create_ngram_set/add_ngram: n-grams of the training set get ids above ``max_features``,
    so the embedding grows with the data; returns the new vocabulary size."""
    if ngram_range < 2:
        return train, test, max_features

    def ngrams(seq):
        seq = list(seq)
        return [g for n in range(2, ngram_range + 1) for g in zip(*[seq[i:] for i in range(n)])]

    token = {g: i + max_features + 1 for i, g in enumerate(sorted({g for seq in train for g in ngrams(seq)}))}

    def augment(seqs):
        return [list(seq) + [token[g] for g in ngrams(seq) if g in token] for seq in seqs]

    vocab = (max(token.values()) + 1) if token else max_features
    return augment(train), augment(test), vocab


def load_fasttext(source, params, global_batch):
    np = frameworks.numpy()
    maxlen, vocab = params["maxlen"], params["max_features"]
    if source.mode == "synthetic":
        x, y, xv, yv = synthetic(datasets.synthetic_sequences, params, 25000, 25000, maxlen // 2, vocab)
        x, xv = list(x), list(xv)
    else:
        (x, y), (xv, yv) = datasets.read_imdb(source, num_words=vocab)
        x, y = cap(x, y, params.get("samples"))  # before the n-grams are drawn from them
        xv, yv = cap(xv, yv, params.get("val_samples"))
    x, xv, full_vocab = add_ngrams(x, xv, vocab, params["ngram_range"])
    x, xv = datasets.pad_sequences(x, maxlen), datasets.pad_sequences(xv, maxlen)
    params["_vocabulary"] = int(full_vocab)  # build_model needs the grown size
    return make_data(x, np.asarray(y), xv, np.asarray(yv), params, source, info={"vocabulary": int(full_vocab)})


def build_fasttext(params):
    L = frameworks.keras().layers
    vocabulary = params.get("_vocabulary") or params["max_features"]
    layers = [L.Embedding(vocabulary, params["embedding_dims"]), L.GlobalAveragePooling1D()]
    return sequential((params["maxlen"],), layers, 1, "sigmoid", "adam", "binary_crossentropy", "int32")


BENCHMARKS = (
    Benchmark(
        name="bilstm-sentiment",
        description="Tweet sentiment, Embedding 128 + bidirectional LSTM 64 (cuDNN on GPU), dropout 0.5, adam",
        study="seed 000 (RaRe Technologies GPU mega-benchmark)",
        dataset="thinknook Twitter sentiment CSV, 1,578,627 tweets, 90/10 split, 2 classes",
        sample_unit="tweet",
        defaults={"epochs": 4, "batch_size": 32, "max_features": 100_000, "maxlen": None},
        load_data=load_tweets,
        build_model=build_tweets,
        param_help={
            "max_features": "vocabulary cap (most frequent words)",
            "maxlen": "tokens per tweet (default: longest tweet; synthetic: 40)",
        },
    ),
    Benchmark(
        name="mnist-mlp",
        description="MNIST multilayer perceptron (Dense 512-512, dropout 0.2, RMSprop)",
        study="seed 002 (Keras examples mnist_mlp.py)",
        dataset="MNIST 60k/10k, 28x28, 10 classes",
        sample_unit="image",
        defaults={"epochs": 20, "batch_size": 128, "hidden": 512},
        load_data=partial(load_mnist, (784,)),
        build_model=build_mnist_mlp,
    ),
    Benchmark(
        name="mnist-cnn",
        description="MNIST convnet (Conv 32-64, max-pool, Dense 128, Adadelta)",
        study="seed 002 (Keras examples mnist_cnn.py)",
        dataset="MNIST 60k/10k, 28x28x1, 10 classes",
        sample_unit="image",
        defaults={"epochs": 12, "batch_size": 128},
        load_data=partial(load_mnist, (28, 28, 1)),
        build_model=build_mnist_cnn,
    ),
    Benchmark(
        name="cifar10-cnn",
        description="CIFAR-10 convnet (4 conv, Dense 512, RMSprop 1e-4) with shift/flip augmentation",
        study="seed 002 (Keras examples cifar10_cnn.py)",
        dataset="CIFAR-10 50k/10k, 32x32x3, 10 classes",
        sample_unit="image",
        defaults={"epochs": 20, "batch_size": 32, "augmentation": True},
        load_data=load_cifar10,
        build_model=build_cifar10,
        param_help={"augmentation": "random 10% shifts and horizontal flips while training"},
    ),
    Benchmark(
        name="imdb-bilstm",
        description="IMDB sentiment, Embedding 128 + bidirectional LSTM 64 (cuDNN on GPU), adam",
        study="seed 002 (Keras examples imdb_bidirectional_lstm.py)",
        dataset="IMDB 25k/25k reviews, top 20000 words, maxlen 100, 2 classes",
        sample_unit="review",
        defaults={"epochs": 4, "batch_size": 32, "max_features": 20000, "maxlen": 100},
        load_data=load_imdb,
        build_model=lambda params: bilstm_classifier(params["maxlen"], params["max_features"]),
        param_help={"max_features": "vocabulary size", "maxlen": "tokens per review"},
    ),
    Benchmark(
        name="text-lstm",
        description="Character-level text generation, LSTM 128 over 40-char windows of Nietzsche, RMSprop",
        study="seed 002 (Keras examples lstm_text_generation.py)",
        dataset="nietzsche.txt (~600k chars, ~57 distinct), windows of 40, step 3",
        sample_unit="character window",
        defaults={"epochs": 10, "batch_size": 128, "maxlen": 40, "step": 3, "units": 128, "chars": 57},
        load_data=load_text,
        build_model=build_text,
        param_help={"chars": "alphabet size of synthetic text", "samples": "cap on training windows"},
    ),
    Benchmark(
        name="imdb-fasttext",
        description="IMDB sentiment, fastText-style bag of uni+bi-gram embeddings (dims 50), adam",
        study="seed 002 (Keras examples imdb_fasttext.py)",
        dataset="IMDB 25k/25k reviews, top 20000 words + bi-grams, maxlen 400, 2 classes",
        sample_unit="review",
        defaults={
            "epochs": 5,
            "batch_size": 32,
            "max_features": 20000,
            "maxlen": 400,
            "ngram_range": 2,
            "embedding_dims": 50,
        },
        load_data=load_fasttext,
        build_model=build_fasttext,
        param_help={"ngram_range": "2 adds bi-gram features (the example's setting)"},
    ),
)
