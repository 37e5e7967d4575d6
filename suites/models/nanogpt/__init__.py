# nanoGPT's model.py as published (github.com/karpathy/nanoGPT at 3adf61e, MIT: LICENSE here), unedited.
