"""BERT's input embedding layer, its encoder, and the mathematics around them: tokenizers, checkpoints, training,
PCA, measures."""
