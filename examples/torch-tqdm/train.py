"""A plain PyTorch training loop with a tqdm bar over the batches, as most hand-written loops are.

Nothing here is written for gpubench: it reads tqdm's `n/total [elapsed<left, rate]`
updates. Offline: generated images, a randomly initialised small convnet.
"""

import os

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from tqdm import tqdm

epochs = int(os.environ.get("EPOCHS", "3"))
batch_size = int(os.environ.get("BATCH_SIZE", "64"))
samples = int(os.environ.get("SAMPLES", "2048"))

torch.manual_seed(0)
data = TensorDataset(torch.randn(samples, 3, 32, 32), torch.randint(0, 10, (samples,)))
loader = DataLoader(data, batch_size=batch_size, shuffle=True)
device = "cuda" if torch.cuda.is_available() else "cpu"
model = nn.Sequential(
    nn.Conv2d(3, 32, 3, padding=1),
    nn.ReLU(),
    nn.MaxPool2d(2),
    nn.Conv2d(32, 64, 3, padding=1),
    nn.ReLU(),
    nn.AdaptiveAvgPool2d(1),
    nn.Flatten(),
    nn.Linear(64, 10),
).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()

for epoch in range(epochs):
    model.train()
    for x, y in tqdm(loader, desc=f"Epoch {epoch + 1}/{epochs}"):
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
