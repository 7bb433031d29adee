"""`core.tables.load_bert_embedding(path)`: the name scripts outside the app load a BERT
checkpoint by, kept stable for them. The reading and checking live in `core/model/checkpoints.py`;
this module only gives them their documented address."""

from core.model.checkpoints import load_bert_embedding

__all__ = ["load_bert_embedding"]
