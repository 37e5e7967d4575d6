"""ResNet-50 in plain torch, laid out as torchvision's (torchvision/models/resnet.py) Bottleneck ResNet.

A 7x7 stem and a max-pool, then four stages of bottleneck blocks (1x1 down, 3x3, 1x1 up by 4, each
followed by BatchNorm; ReLU after the first two and after the residual sum), the stride on the 3x3
(ResNet v1.5, as torchvision), a 1x1 strided projection on the shortcut where the shape changes,
global average pooling and one Linear. `width` is the stem's channels (64 in ResNet-50): smaller
widths and fewer blocks give the tiny variants the tests run on a CPU.
"""

from __future__ import annotations

import torch
import torch.nn as nn

RESNET50_LAYERS = (3, 4, 6, 3)


def conv3x3(in_planes: int, out_planes: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)


def conv1x1(in_planes: int, out_planes: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: nn.Module | None = None):
        super().__init__()
        self.conv1 = conv1x1(inplanes, planes)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = conv3x3(planes, planes, stride)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = conv1x1(planes, planes * self.expansion)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    def __init__(self, layers: tuple[int, ...] = RESNET50_LAYERS, num_classes: int = 1000, width: int = 64):
        super().__init__()
        self.inplanes = width
        self.conv1 = nn.Conv2d(3, width, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(width, layers[0])
        self.layer2 = self._make_layer(width * 2, layers[1], stride=2)
        self.layer3 = self._make_layer(width * 4, layers[2], stride=2)
        self.layer4 = self._make_layer(width * 8, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(width * 8 * Bottleneck.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def _make_layer(self, planes: int, blocks: int, stride: int = 1) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.inplanes != planes * Bottleneck.expansion:
            downsample = nn.Sequential(
                conv1x1(self.inplanes, planes * Bottleneck.expansion, stride),
                nn.BatchNorm2d(planes * Bottleneck.expansion),
            )
        layers = [Bottleneck(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * Bottleneck.expansion
        layers += [Bottleneck(self.inplanes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


def resnet50(num_classes: int = 1000) -> ResNet:
    return ResNet(RESNET50_LAYERS, num_classes)


def _out(size: int, kernel: int, stride: int, padding: int) -> int:
    return (size + 2 * padding - kernel) // stride + 1


def macs(layers: tuple[int, ...] = RESNET50_LAYERS, num_classes: int = 1000, width: int = 64, image: int = 224) -> int:
    """Multiply-accumulates of one image through the convolutions and the Linear (BatchNorm, ReLU,
    pooling and the residual sums are a few per element, left out as everyone leaves them out):
    4,089,184,256 for ResNet-50 at 224x224, torchvision's "4.09 GFLOPS"."""
    size = _out(image, 7, 2, 3)
    total = size * size * width * 3 * 7 * 7
    size = _out(size, 3, 2, 1)  # the max-pool
    inplanes = width
    for stage, blocks in enumerate(layers):
        planes = width * 2**stage
        for block in range(blocks):
            stride = 2 if stage > 0 and block == 0 else 1
            out = _out(size, 3, stride, 1)
            total += size * size * inplanes * planes  # conv1, 1x1 at the block's input size
            total += out * out * planes * planes * 9  # conv2, 3x3, strided
            total += out * out * planes * planes * Bottleneck.expansion  # conv3, 1x1
            if stride != 1 or inplanes != planes * Bottleneck.expansion:  # the projection shortcut
                total += out * out * inplanes * planes * Bottleneck.expansion
            inplanes, size = planes * Bottleneck.expansion, out
    return total + inplanes * num_classes
