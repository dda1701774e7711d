"""A LightningModule trained with Trainer.fit, as Lightning's own quick start writes it.

Nothing here is written for gpubench: it reads Lightning's progress bar (a tqdm
bar). Offline: generated data, a randomly initialised model.
"""

import os

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

epochs = int(os.environ.get("EPOCHS", "3"))
batch_size = int(os.environ.get("BATCH_SIZE", "64"))
samples = int(os.environ.get("SAMPLES", "4096"))


class LitClassifier(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.cross_entropy(self.model(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


torch.manual_seed(0)
data = TensorDataset(torch.randn(samples, 784), torch.randint(0, 10, (samples,)))
trainer = L.Trainer(max_epochs=epochs, accelerator="auto", devices=1, logger=False, enable_checkpointing=False)
trainer.fit(LitClassifier(), DataLoader(data, batch_size=batch_size, shuffle=True))
