"""Stage 4: the re-ranking models (TK, KNRM, Conv-KNRM, BERT-cat, TILDE), all with one scoring interface.

Every model is a ``torch.nn.Module`` whose ``forward(query_ids, query_mask, doc_ids, doc_mask)``
takes a batch of token ids (``LongTensor[B, L]``, padding id 0) and boolean masks (``True`` for a
real token) for queries and documents and returns one score per pair (``FloatTensor[B]``), and whose
``optimizer_groups()`` returns the parameter groups with the learning rates of the TK paper (§4.3).
"""
