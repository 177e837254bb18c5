"""Train the tiny GPT of the KV Cache tab, one checkpoint per attention variant, and commit them.

    python scripts/train_tiny_gpt.py                    # all four: mha, gqa, mqa, mla (~25 min, 1 core)
    python scripts/train_tiny_gpt.py --variants mla --steps 200 --out /tmp/ckpt

Reads ``data/corpus/en.txt``, holds out its last 10 %, trains each variant from the same seed on
the rest and writes ``data/tiny_gpt/<name>.pt`` (fp16 weights, the vocabulary, and the validation
loss measured on the fp16-rounded weights: ``tests/test_kv_backend.py`` reloads each file and
checks that it reproduces that loss).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models.transformer import Transformer  # noqa: E402
from models.tiny_gpt import (CHECKPOINT_DIR, CORPUS, VARIANTS, CharVocab, checkpoint_name,  # noqa: E402
                             load_checkpoint, save_checkpoint, split_corpus, train_tiny_gpt,
                             trained_configs, validation_loss)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--out", type=Path, default=CHECKPOINT_DIR)
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--threads", type=int, default=1, help="CPU threads (the dev machine is shared)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    text = args.corpus.read_text(encoding="utf-8")
    vocab = CharVocab.of_text(text)
    train, val = split_corpus(text)
    train_ids, val_ids = torch.tensor(vocab.encode(train)), torch.tensor(vocab.encode(val))
    print(f"{args.corpus}: {len(text):,} characters, {len(vocab)} distinct; "
          f"train {len(train_ids):,}, validation {len(val_ids):,}")
    args.out.mkdir(parents=True, exist_ok=True)
    configs = trained_configs(len(vocab))
    for variant in args.variants:
        model, recipe = train_tiny_gpt(configs[variant], train_ids, val_ids, steps=args.steps, batch=args.batch,
                                       lr=args.lr)
        stored = Transformer(configs[variant].transformer())   # the weights as stored (fp16): the loss is theirs
        stored.load_state_dict({k: v.half().float() for k, v in model.state_dict().items()})
        model = stored.eval()
        val_loss = validation_loss(model, val_ids)
        path = args.out / f"{checkpoint_name(configs[variant])}.pt"
        save_checkpoint(path, model, vocab, val_loss, dict(recipe, corpus=args.corpus.name))
        assert abs(validation_loss(load_checkpoint(path, "cpu").model, val_ids) - val_loss) < 1e-6
        params = sum(p.numel() for p in model.parameters())
        print(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB, {params:,} parameters, "
              f"validation loss {val_loss:.4f} nats/char)")


if __name__ == "__main__":
    main()
