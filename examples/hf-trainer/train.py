"""A Hugging Face Trainer fine-tuning a small BERT classifier, as the Transformers docs write it.

Nothing here is written for gpubench: it reads the Trainer's logged dictionaries
(`{'loss': ..., 'epoch': ...}`) and its final `train_samples_per_second`. Offline:
the model is randomly initialised from a config (no download), the tokens are generated.
"""

import os

import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

epochs = int(os.environ.get("EPOCHS", "2"))
batch_size = int(os.environ.get("BATCH_SIZE", "16"))
samples = int(os.environ.get("SAMPLES", "1024"))


class Tokens(torch.utils.data.Dataset):
    """Generated token ids and labels in the dictionaries a tokenizer would give."""

    def __init__(self, n: int, length: int = 64, vocab: int = 1000):
        g = torch.Generator().manual_seed(0)
        self.ids = torch.randint(0, vocab, (n, length), generator=g)
        self.labels = torch.randint(0, 2, (n,), generator=g)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": torch.ones_like(self.ids[i]), "labels": self.labels[i]}


config = BertConfig(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128)
model = BertForSequenceClassification(config)
args = TrainingArguments(
    output_dir="out",
    num_train_epochs=epochs,
    per_device_train_batch_size=batch_size,
    logging_steps=5,
    save_strategy="no",
    report_to="none",
)
trainer = Trainer(model=model, args=args, train_dataset=Tokens(samples))
trainer.train()
