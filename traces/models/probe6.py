"""Encoder NLP models written small the way Hugging Face transformers' modeling files write them
(transformers is not imported: the modules are rewritten here): RoBERTa (position ids from the
padding mask), DeBERTa-v2 (disentangled attention, log position buckets), ALBERT, DistilBERT, an
ELECTRA discriminator, XLM-RoBERTa (token types, extended mask to finfo.min), MPNet (relative
attention bias buckets), ConvBERT (span-based dynamic convolution by unfold), Funnel (strided
mean pooling of the query), LayoutLM (2D box embeddings), CANINE-style hash embeddings with a
strided downsampling conv, BigBird-style block-sparse attention, sentence-transformers mean
pooling and a token-classification head with a CRF Viterbi decode.  Seeded weights, eval mode,
small configs: each exports and runs in seconds.  Results in docs/conformance.md ("Whole models
a user brings (session 40, Hugging Face encoders)").  Export one with
  /usr/bin/python3 tools/export.py traces/models/probe6.py:roberta -o /tmp/roberta
"""
import math

import torch
from torch import nn
import torch.nn.functional as F

H, NH, FF, V, L, B = 32, 4, 64, 50, 10, 2
PAD = 1


def ids_with_padding(pad=PAD, vocab=V, b=B, n=L):
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(3, vocab, (b, n), generator=g)
    ids[1, -3:] = pad
    return ids


def mask_of(ids, pad=PAD):
    return (ids != pad).long()


# BERT-family building blocks (modeling_bert.py)

class SelfAttention(nn.Module):
    def __init__(self, h=H, nh=NH):
        super().__init__()
        self.nh, self.dh = nh, h // nh
        self.query, self.key, self.value = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)

    def transpose_for_scores(self, x):
        return x.view(x.size()[:-1] + (self.nh, self.dh)).permute(0, 2, 1, 3)

    def forward(self, hidden, ext_mask):
        q = self.transpose_for_scores(self.query(hidden))
        k = self.transpose_for_scores(self.key(hidden))
        v = self.transpose_for_scores(self.value(hidden))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.dh)
        scores = scores + ext_mask
        probs = nn.functional.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        return ctx.view(ctx.size()[:-2] + (self.nh * self.dh,))


class Layer(nn.Module):
    def __init__(self, h=H, ff=FF, attn=None):
        super().__init__()
        self.attention = attn if attn is not None else SelfAttention(h)
        self.attn_out = nn.Linear(h, h)
        self.ln1 = nn.LayerNorm(h, eps=1e-12)
        self.intermediate = nn.Linear(h, ff)
        self.output = nn.Linear(ff, h)
        self.ln2 = nn.LayerNorm(h, eps=1e-12)

    def forward(self, x, ext_mask):
        a = self.ln1(self.attn_out(self.attention(x, ext_mask)) + x)
        return self.ln2(self.output(F.gelu(self.intermediate(a))) + a)


def extended_mask(mask, dtype=torch.float32):
    ext = mask[:, None, None, :].to(dtype=dtype)
    return (1.0 - ext) * torch.finfo(dtype).min


# RoBERTa (modeling_roberta.py)

def create_position_ids_from_input_ids(input_ids, padding_idx, past_key_values_length=0):
    mask = input_ids.ne(padding_idx).int()
    incremental_indices = (torch.cumsum(mask, dim=1).type_as(mask) + past_key_values_length) * mask
    return incremental_indices.long() + padding_idx


class RobertaEmbeddings(nn.Module):
    def __init__(self, h=H, vocab=V, maxpos=L + 2, types=1):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, h, padding_idx=PAD)
        self.position_embeddings = nn.Embedding(maxpos, h, padding_idx=PAD)
        self.token_type_embeddings = nn.Embedding(types, h)
        self.LayerNorm = nn.LayerNorm(h, eps=1e-5)
        self.padding_idx = PAD

    def forward(self, input_ids, token_type_ids=None):
        position_ids = create_position_ids_from_input_ids(input_ids, self.padding_idx)
        if token_type_ids is None:
            token_type_ids = torch.zeros(input_ids.size(), dtype=torch.long)
        e = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        return self.LayerNorm(e + self.position_embeddings(position_ids))


class Roberta(nn.Module):
    def __init__(self, types=1):
        super().__init__()
        self.embeddings = RobertaEmbeddings(types=types)
        self.layer = Layer()

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        x = self.embeddings(input_ids, token_type_ids)
        return self.layer(x, extended_mask(attention_mask))


def roberta():
    ids = ids_with_padding()
    return Roberta(), (ids, mask_of(ids))


# XLM-RoBERTa: RoBERTa's embeddings with token types, the -10000 form of the mask

class XLMR(nn.Module):
    def __init__(self):
        super().__init__()
        self.embeddings = RobertaEmbeddings(types=2)
        self.layer = Layer()
        self.pooler = nn.Linear(H, H)

    def forward(self, input_ids, attention_mask, token_type_ids):
        x = self.embeddings(input_ids, token_type_ids)
        ext = (1.0 - attention_mask[:, None, None, :].float()) * -10000.0
        x = self.layer(x, ext)
        return x, torch.tanh(self.pooler(x[:, 0]))


def xlmr():
    ids = ids_with_padding()
    tt = torch.zeros_like(ids)
    tt[:, 5:] = 1
    return XLMR(), (ids, mask_of(ids), tt)


# DeBERTa-v2 (modeling_deberta_v2.py): log buckets, c2p and p2c by gather

def make_log_bucket_position(relative_pos, bucket_size, max_position):
    sign = torch.sign(relative_pos)
    mid = bucket_size // 2
    abs_pos = torch.where(
        (relative_pos < mid) & (relative_pos > -mid),
        torch.tensor(mid - 1).type_as(relative_pos),
        torch.abs(relative_pos),
    )
    log_pos = (
        torch.ceil(torch.log(abs_pos / mid) / torch.log(torch.tensor((max_position - 1) / mid)) * (mid - 1)) + mid
    )
    bucket_pos = torch.where(abs_pos <= mid, relative_pos.type_as(log_pos), log_pos * sign)
    return bucket_pos


def build_relative_position(query_size, key_size, bucket_size=-1, max_position=-1):
    q_ids = torch.arange(0, query_size)
    k_ids = torch.arange(0, key_size)
    rel_pos_ids = q_ids[:, None] - k_ids[None, :]
    if bucket_size > 0 and max_position > 0:
        rel_pos_ids = make_log_bucket_position(rel_pos_ids, bucket_size, max_position)
    rel_pos_ids = rel_pos_ids.to(torch.long)
    rel_pos_ids = rel_pos_ids[:query_size, :]
    return rel_pos_ids.unsqueeze(0)


class DisentangledSelfAttention(nn.Module):
    def __init__(self, h=H, nh=NH, buckets=8, max_pos=32):
        super().__init__()
        self.nh, self.dh = nh, h // nh
        self.query_proj, self.key_proj, self.value_proj = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)
        self.position_buckets, self.max_relative_positions = buckets, max_pos
        self.pos_ebd_size = buckets
        self.rel_embeddings = nn.Embedding(buckets * 2, h)
        self.norm_rel = nn.LayerNorm(h, eps=1e-7)

    def transpose_for_scores(self, x):
        x = x.view(x.size()[:-1] + (self.nh, -1))
        return x.permute(0, 2, 1, 3).contiguous().view(-1, x.size(1), x.size(-1))

    def forward(self, hidden, attention_mask):
        q = self.transpose_for_scores(self.query_proj(hidden))
        k = self.transpose_for_scores(self.key_proj(hidden))
        v = self.transpose_for_scores(self.value_proj(hidden))
        scale_factor = 3
        scale = math.sqrt(q.size(-1) * scale_factor)
        attn = torch.bmm(q, k.transpose(-1, -2) / scale)
        rel_pos = build_relative_position(q.size(-2), k.size(-2), self.position_buckets, self.max_relative_positions)
        rel_emb = self.norm_rel(self.rel_embeddings.weight)[0:self.pos_ebd_size * 2, :].unsqueeze(0)
        pos_q = self.transpose_for_scores(self.query_proj(rel_emb)).repeat(q.size(0) // self.nh, 1, 1)
        pos_k = self.transpose_for_scores(self.key_proj(rel_emb)).repeat(q.size(0) // self.nh, 1, 1)
        att_span = self.pos_ebd_size
        c2p_att = torch.bmm(q, pos_k.transpose(-1, -2) / scale)
        c2p_pos = torch.clamp(rel_pos + att_span, 0, att_span * 2 - 1)
        c2p_att = torch.gather(c2p_att, dim=-1, index=c2p_pos.squeeze(0).expand([q.size(0), q.size(1), rel_pos.size(-1)]))
        p2c_att = torch.bmm(k, pos_q.transpose(-1, -2) / scale)
        p2c_pos = torch.clamp(-rel_pos + att_span, 0, att_span * 2 - 1)
        p2c_att = torch.gather(p2c_att, dim=-1, index=p2c_pos.squeeze(0).expand([q.size(0), k.size(-2), k.size(-2)])).transpose(-1, -2)
        attn = attn + c2p_att + p2c_att
        attn = attn.view(-1, self.nh, attn.size(-2), attn.size(-1))
        rmask = ~(attention_mask.to(torch.bool))
        attn = attn.masked_fill(rmask, torch.finfo(attn.dtype).min)
        probs = F.softmax(attn, dim=-1)
        ctx = torch.bmm(probs.view(-1, probs.size(-2), probs.size(-1)), v)
        ctx = ctx.view(-1, self.nh, ctx.size(-2), ctx.size(-1)).permute(0, 2, 1, 3).contiguous()
        return ctx.view(ctx.size()[:-2] + (-1,))


class DebertaV2(nn.Module):
    def __init__(self):
        super().__init__()
        self.word_embeddings = nn.Embedding(V, H)
        self.LayerNorm = nn.LayerNorm(H, eps=1e-7)
        self.layer = Layer(attn=DisentangledSelfAttention())

    def forward(self, input_ids, attention_mask):
        x = self.LayerNorm(self.word_embeddings(input_ids)) * attention_mask.unsqueeze(2).float()
        m = attention_mask.unsqueeze(1).unsqueeze(2)
        m = m * m.squeeze(-2).unsqueeze(-1)
        return self.layer(x, m)


def deberta():
    ids = ids_with_padding(pad=0)
    return DebertaV2(), (ids, mask_of(ids, 0))


# ALBERT (modeling_albert.py): factorized embeddings, one layer shared

class Albert(nn.Module):
    def __init__(self, emb=16, loops=3):
        super().__init__()
        self.word_embeddings = nn.Embedding(V, emb)
        self.position_embeddings = nn.Embedding(L, emb)
        self.token_type_embeddings = nn.Embedding(2, emb)
        self.LayerNorm = nn.LayerNorm(emb, eps=1e-12)
        self.embedding_hidden_mapping_in = nn.Linear(emb, H)
        self.albert_layer = Layer()
        self.loops = loops
        self.register_buffer("position_ids", torch.arange(L).expand((1, -1)))

    def forward(self, input_ids, attention_mask, token_type_ids):
        pos = self.position_ids[:, :input_ids.size(1)]
        e = self.word_embeddings(input_ids) + self.position_embeddings(pos) + self.token_type_embeddings(token_type_ids)
        x = self.embedding_hidden_mapping_in(self.LayerNorm(e))
        ext = extended_mask(attention_mask)
        for _ in range(self.loops):
            x = self.albert_layer(x, ext)
        return x


def albert():
    ids = ids_with_padding(pad=0)
    return Albert(), (ids, mask_of(ids, 0), torch.zeros_like(ids))


# DistilBERT (modeling_distilbert.py): sinusoidal positions off, mask by masked_fill

class DistilAttention(nn.Module):
    def __init__(self, h=H, nh=NH):
        super().__init__()
        self.n_heads, self.dim = nh, h
        self.q_lin, self.k_lin, self.v_lin, self.out_lin = (nn.Linear(h, h) for _ in range(4))

    def forward(self, query, mask):
        bs, q_length, dim = query.size()
        dim_per_head = self.dim // self.n_heads
        mask_reshp = (bs, 1, 1, q_length)

        def shape(x):
            return x.view(bs, -1, self.n_heads, dim_per_head).transpose(1, 2)

        q = shape(self.q_lin(query)) / math.sqrt(dim_per_head)
        k, v = shape(self.k_lin(query)), shape(self.v_lin(query))
        scores = torch.matmul(q, k.transpose(2, 3))
        mask = (mask == 0).view(mask_reshp).expand_as(scores)
        scores = scores.masked_fill(mask, torch.tensor(torch.finfo(scores.dtype).min))
        weights = nn.functional.softmax(scores, dim=-1)
        context = torch.matmul(weights, v).transpose(1, 2).contiguous().view(bs, -1, self.n_heads * dim_per_head)
        return self.out_lin(context)


class DistilBert(nn.Module):
    def __init__(self):
        super().__init__()
        self.word_embeddings = nn.Embedding(V, H)
        self.position_embeddings = nn.Embedding(L, H)
        self.LayerNorm = nn.LayerNorm(H, eps=1e-12)
        self.attention = DistilAttention()
        self.sa_layer_norm = nn.LayerNorm(H, eps=1e-12)
        self.lin1, self.lin2 = nn.Linear(H, FF), nn.Linear(FF, H)
        self.output_layer_norm = nn.LayerNorm(H, eps=1e-12)
        self.pre_classifier, self.classifier = nn.Linear(H, H), nn.Linear(H, 3)

    def forward(self, input_ids, attention_mask):
        position_ids = torch.arange(input_ids.size(1), dtype=torch.long).unsqueeze(0).expand_as(input_ids)
        x = self.LayerNorm(self.word_embeddings(input_ids) + self.position_embeddings(position_ids))
        x = self.sa_layer_norm(self.attention(x, attention_mask) + x)
        x = self.output_layer_norm(self.lin2(F.gelu(self.lin1(x))) + x)
        pooled = F.relu(self.pre_classifier(x[:, 0]))
        return self.classifier(pooled)


def distilbert():
    ids = ids_with_padding(pad=0)
    return DistilBert(), (ids, mask_of(ids, 0))


# ELECTRA discriminator (modeling_electra.py): per-token real/fake logit

class Electra(nn.Module):
    def __init__(self, emb=16):
        super().__init__()
        self.word_embeddings = nn.Embedding(V, emb)
        self.position_embeddings = nn.Embedding(L, emb)
        self.token_type_embeddings = nn.Embedding(2, emb)
        self.LayerNorm = nn.LayerNorm(emb, eps=1e-12)
        self.embeddings_project = nn.Linear(emb, H)
        self.layer = Layer()
        self.dense = nn.Linear(H, H)
        self.dense_prediction = nn.Linear(H, 1)

    def forward(self, input_ids, attention_mask, token_type_ids):
        pos = torch.arange(input_ids.size(1)).expand((1, -1))
        e = self.word_embeddings(input_ids) + self.position_embeddings(pos) + self.token_type_embeddings(token_type_ids)
        x = self.layer(self.embeddings_project(self.LayerNorm(e)), extended_mask(attention_mask))
        return self.dense_prediction(F.gelu(self.dense(x))).squeeze(-1)


def electra():
    ids = ids_with_padding(pad=0)
    return Electra(), (ids, mask_of(ids, 0), torch.zeros_like(ids))


# MPNet (modeling_mpnet.py): T5-style relative position buckets, a bias shared by the layers

class MPNet(nn.Module):
    def __init__(self, buckets=32):
        super().__init__()
        self.embeddings = RobertaEmbeddings()
        self.relative_attention_bias = nn.Embedding(buckets, NH)
        self.num_buckets = buckets
        self.layer = Layer()

    @staticmethod
    def relative_position_bucket(relative_position, num_buckets=32, max_distance=128):
        ret = 0
        n = -relative_position
        num_buckets //= 2
        ret += (n < 0).to(torch.long) * num_buckets
        n = torch.abs(n)
        max_exact = num_buckets // 2
        is_small = n < max_exact
        val_if_large = max_exact + (
            torch.log(n.float() / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
        ).to(torch.long)
        val_if_large = torch.min(val_if_large, torch.full_like(val_if_large, num_buckets - 1))
        ret += torch.where(is_small, n, val_if_large)
        return ret

    def compute_position_bias(self, x):
        bsz, qlen, klen = x.size(0), x.size(1), x.size(1)
        context_position = torch.arange(qlen, dtype=torch.long)[:, None]
        memory_position = torch.arange(klen, dtype=torch.long)[None, :]
        relative_position = memory_position - context_position
        rp_bucket = self.relative_position_bucket(relative_position, num_buckets=self.num_buckets)
        values = self.relative_attention_bias(rp_bucket)
        values = values.permute([2, 0, 1]).unsqueeze(0)
        return values.expand((bsz, -1, qlen, klen)).contiguous()

    def forward(self, input_ids, attention_mask):
        x = self.embeddings(input_ids)
        bias = self.compute_position_bias(x)
        return self.layer(x, extended_mask(attention_mask) + bias)


def mpnet():
    ids = ids_with_padding()
    return MPNet(), (ids, mask_of(ids))


# ConvBERT (modeling_convbert.py): span-based dynamic convolution by unfold

class ConvBertAttention(nn.Module):
    def __init__(self, h=H, nh=NH, ratio=2, k=3):
        super().__init__()
        nh = nh // ratio
        self.nh, self.dh, self.k = nh, h // NH, k
        self.all_head_size = nh * self.dh
        self.query, self.key, self.value = (nn.Linear(h, self.all_head_size) for _ in range(3))
        self.key_conv_attn_layer = nn.Sequential(nn.Conv1d(h, h, k, groups=h, padding=k // 2, bias=False),
                                                 nn.Conv1d(h, self.all_head_size, 1))
        self.conv_kernel_layer = nn.Linear(self.all_head_size, nh * k)
        self.conv_out_layer = nn.Linear(h, self.all_head_size)

    def forward(self, hidden, ext_mask):
        b = hidden.size(0)
        mq, mk, mv = self.query(hidden), self.key(hidden), self.value(hidden)
        mka = self.key_conv_attn_layer(hidden.transpose(1, 2)).transpose(1, 2)

        def tfs(x):
            return x.view(b, -1, self.nh, self.dh).permute(0, 2, 1, 3)

        ql, kl, vl = tfs(mq), tfs(mk), tfs(mv)
        conv_attn = torch.multiply(mka, mq)
        ck = self.conv_kernel_layer(conv_attn).reshape(-1, self.k, 1)
        ck = torch.softmax(ck, dim=1)
        co = self.conv_out_layer(hidden)
        co = torch.reshape(co, [b, -1, self.all_head_size]).transpose(1, 2).contiguous().unsqueeze(-1)
        co = nn.functional.unfold(co, kernel_size=[self.k, 1], dilation=1, padding=[(self.k - 1) // 2, 0], stride=1)
        co = co.transpose(1, 2).reshape(b, -1, self.all_head_size, self.k)
        co = torch.reshape(co, [-1, self.dh, self.k])
        co = torch.matmul(co, ck)
        co = torch.reshape(co, [-1, self.all_head_size])
        scores = torch.matmul(ql, kl.transpose(-1, -2)) / math.sqrt(self.dh) + ext_mask
        probs = nn.functional.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, vl).permute(0, 2, 1, 3).contiguous()
        co = torch.reshape(co, [b, -1, self.nh, self.dh])
        ctx = torch.cat([ctx, co], 2)
        return ctx.view(ctx.size()[:-2] + (self.nh * 2 * self.dh,))


class ConvBert(nn.Module):
    def __init__(self):
        super().__init__()
        self.word_embeddings = nn.Embedding(V, H)
        self.layer = Layer(attn=ConvBertAttention())

    def forward(self, input_ids, attention_mask):
        return self.layer(self.word_embeddings(input_ids), extended_mask(attention_mask))


def convbert():
    ids = ids_with_padding(pad=0)
    return ConvBert(), (ids, mask_of(ids, 0))


# Funnel Transformer (modeling_funnel.py): the query mean-pooled with stride 2

class FunnelBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(H, NH, batch_first=True)
        self.ln1 = nn.LayerNorm(H)
        self.ff = nn.Sequential(nn.Linear(H, FF), nn.GELU(), nn.Linear(FF, H))
        self.ln2 = nn.LayerNorm(H)

    @staticmethod
    def pool(x):
        # the CLS token kept apart ("separate_cls"), the rest mean-pooled by 2 ("truncate_seq")
        suffix = x[:, :-1]
        x = torch.cat([x[:, :1], suffix], dim=1)
        return F.avg_pool2d(x[:, None], (2, 1), stride=(2, 1), ceil_mode=True)[:, 0]

    @staticmethod
    def pool_mask(mask):
        mask = torch.cat([mask[:, :1], mask[:, :-1]], dim=1)
        return -F.max_pool2d(-mask[:, None, :, None], (2, 1), stride=(2, 1), ceil_mode=True)[:, 0, :, 0]

    def forward(self, x, key_mask, pool):
        q = self.pool(x) if pool else x
        a, _ = self.attn(q, x, x, key_padding_mask=key_mask == 0, need_weights=False)
        x = self.ln1(q + a)
        return self.ln2(x + self.ff(x))


class Funnel(nn.Module):
    def __init__(self):
        super().__init__()
        self.word_embeddings = nn.Embedding(V, H)
        self.blocks = nn.ModuleList(FunnelBlock() for _ in range(2))

    def forward(self, input_ids, attention_mask):
        x = self.word_embeddings(input_ids)
        m = attention_mask.float()
        x = self.blocks[0](x, m, False)
        x2 = self.blocks[1](x, m, True)
        return x2, self.blocks[1].pool_mask(m)


def funnel():
    ids = ids_with_padding(pad=0)
    return Funnel(), (ids, mask_of(ids, 0))


# LayoutLM (modeling_layoutlm.py): 2D box embeddings

class LayoutLM(nn.Module):
    def __init__(self, max_2d=64):
        super().__init__()
        self.word_embeddings = nn.Embedding(V, H)
        self.position_embeddings = nn.Embedding(L, H)
        self.x_position_embeddings = nn.Embedding(max_2d, H)
        self.y_position_embeddings = nn.Embedding(max_2d, H)
        self.h_position_embeddings = nn.Embedding(max_2d, H)
        self.w_position_embeddings = nn.Embedding(max_2d, H)
        self.token_type_embeddings = nn.Embedding(2, H)
        self.LayerNorm = nn.LayerNorm(H, eps=1e-12)
        self.layer = Layer()

    def forward(self, input_ids, bbox, attention_mask):
        position_ids = torch.arange(input_ids.size(1), dtype=torch.long).unsqueeze(0).expand_as(input_ids)
        token_type_ids = torch.zeros_like(input_ids)
        left = self.x_position_embeddings(bbox[:, :, 0])
        upper = self.y_position_embeddings(bbox[:, :, 1])
        right = self.x_position_embeddings(bbox[:, :, 2])
        lower = self.y_position_embeddings(bbox[:, :, 3])
        h = self.h_position_embeddings(bbox[:, :, 3] - bbox[:, :, 1])
        w = self.w_position_embeddings(bbox[:, :, 2] - bbox[:, :, 0])
        e = (self.word_embeddings(input_ids) + self.position_embeddings(position_ids) + left + upper + right + lower
             + h + w + self.token_type_embeddings(token_type_ids))
        return self.layer(self.LayerNorm(e), extended_mask(attention_mask))


def layoutlm():
    ids = ids_with_padding(pad=0)
    g = torch.Generator().manual_seed(2)
    x0 = torch.randint(0, 32, (B, L, 1), generator=g)
    y0 = torch.randint(0, 32, (B, L, 1), generator=g)
    bbox = torch.cat([x0, y0, x0 + torch.randint(0, 32, (B, L, 1), generator=g),
                      y0 + torch.randint(0, 32, (B, L, 1), generator=g)], dim=-1)
    return LayoutLM(), (ids, bbox, mask_of(ids, 0))


# CANINE (modeling_canine.py): hashed character embeddings, strided downsampling conv

class Canine(nn.Module):
    PRIMES = [31, 43, 59, 61, 73, 97, 103, 113]

    def __init__(self, shards=4, buckets=64, rate=2):
        super().__init__()
        self.shards, self.buckets = shards, buckets
        self.hash_embeddings = nn.ModuleList(nn.Embedding(buckets, H // shards) for _ in range(shards))
        self.char_position_embeddings = nn.Embedding(16, H)
        self.LayerNorm = nn.LayerNorm(H, eps=1e-12)
        self.conv = nn.Conv1d(H, H, kernel_size=rate, stride=rate)
        self.activation = nn.GELU()
        self.ln2 = nn.LayerNorm(H)

    def _hash_bucket_tensors(self, input_ids, num_hashes, num_buckets):
        result_tensors = []
        for hash_func_id in range(num_hashes):
            hashed = ((input_ids + 1) * self.PRIMES[hash_func_id]) % num_buckets
            result_tensors.append(hashed)
        return result_tensors

    def forward(self, input_ids):
        embs = [emb(h) for emb, h in zip(self.hash_embeddings,
                                         self._hash_bucket_tensors(input_ids, self.shards, self.buckets))]
        x = torch.cat(embs, dim=-1)
        pos = torch.arange(input_ids.size(1)).expand((1, -1))
        x = self.LayerNorm(x + self.char_position_embeddings(pos))
        y = self.activation(self.conv(torch.transpose(x, 1, 2)))
        return self.ln2(torch.transpose(y, 1, 2))


def canine():
    g = torch.Generator().manual_seed(3)
    return Canine(), (torch.randint(0, 0x10FFFF, (B, 16), generator=g),)


# BigBird (modeling_big_bird.py), block-sparse attention reduced: per query block its own block,
# its neighbours, the global first block and random blocks fixed by a seed, gathered

class BigBirdAttention(nn.Module):
    def __init__(self, h=H, nh=NH, block=4, nblocks=6, nrand=1):
        super().__init__()
        self.nh, self.dh, self.block = nh, h // nh, block
        self.query, self.key, self.value = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)
        g = torch.Generator().manual_seed(4)
        rand = torch.stack([torch.randperm(nblocks, generator=g)[:nrand] for _ in range(nblocks)])
        sel = torch.cat([torch.zeros(nblocks, 1, dtype=torch.long),
                         (torch.arange(nblocks)[:, None] + torch.tensor([-1, 0, 1])) % nblocks, rand], dim=1)
        self.register_buffer("rand_attn", sel)

    def forward(self, x):
        b, n, _ = x.shape
        nb = n // self.block

        def heads(t):
            return t.view(b, n, self.nh, self.dh).transpose(1, 2)

        q, k, v = heads(self.query(x)), heads(self.key(x)), heads(self.value(x))
        bq = q.view(b, self.nh, nb, self.block, self.dh)
        bk = k.view(b, self.nh, nb, self.block, self.dh)
        bv = v.view(b, self.nh, nb, self.block, self.dh)
        gk = bk[:, :, self.rand_attn.flatten()].reshape(b, self.nh, nb, -1, self.dh)
        gv = bv[:, :, self.rand_attn.flatten()].reshape(b, self.nh, nb, -1, self.dh)
        s = torch.einsum("bhqld,bhqkd->bhqlk", bq, gk) / math.sqrt(self.dh)
        p = F.softmax(s, dim=-1)
        o = torch.einsum("bhqlk,bhqkd->bhqld", p, gv)
        return o.reshape(b, self.nh, n, self.dh).transpose(1, 2).reshape(b, n, -1)


class BigBird(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = BigBirdAttention()
        self.ln = nn.LayerNorm(H)

    def forward(self, x):
        return self.ln(x + self.attn(x))


def bigbird():
    return BigBird(), (torch.randn(B, 24, H),)


# sentence-transformers: a BERT layer, mean pooling with the attention mask, normalize

class SentenceEmbedder(nn.Module):
    def __init__(self):
        super().__init__()
        self.word_embeddings = nn.Embedding(V, H)
        self.position_embeddings = nn.Embedding(L, H)
        self.LayerNorm = nn.LayerNorm(H, eps=1e-12)
        self.layer = Layer()

    def forward(self, input_ids, attention_mask):
        pos = torch.arange(input_ids.size(1)).unsqueeze(0)
        x = self.LayerNorm(self.word_embeddings(input_ids) + self.position_embeddings(pos))
        token_embeddings = self.layer(x, extended_mask(attention_mask))
        input_mask_expanded = attention_mask.unsqueeze(-1).expand(token_embeddings.size()).float()
        emb = torch.sum(token_embeddings * input_mask_expanded, 1) / torch.clamp(input_mask_expanded.sum(1), min=1e-9)
        return F.normalize(emb, p=2, dim=1)


def sbert():
    ids = ids_with_padding(pad=0)
    return SentenceEmbedder(), (ids, mask_of(ids, 0))


# token classification with a CRF (pytorch-crf's Viterbi decode, batch first)

class CRFTagger(nn.Module):
    def __init__(self, tags=5):
        super().__init__()
        self.word_embeddings = nn.Embedding(V, H)
        self.layer = Layer()
        self.classifier = nn.Linear(H, tags)
        self.start_transitions = nn.Parameter(torch.randn(tags) * 0.1)
        self.end_transitions = nn.Parameter(torch.randn(tags) * 0.1)
        self.transitions = nn.Parameter(torch.randn(tags, tags) * 0.1)

    def forward(self, input_ids, attention_mask):
        x = self.layer(self.word_embeddings(input_ids), extended_mask(attention_mask))
        emissions = self.classifier(x).transpose(0, 1)
        mask = attention_mask.transpose(0, 1).bool()
        seq_length = emissions.size(0)
        score = self.start_transitions + emissions[0]
        history = []
        for i in range(1, seq_length):
            broadcast_score = score.unsqueeze(2)
            broadcast_emission = emissions[i].unsqueeze(1)
            next_score = broadcast_score + self.transitions + broadcast_emission
            next_score, indices = next_score.max(dim=1)
            score = torch.where(mask[i].unsqueeze(1), next_score, score)
            history.append(indices)
        score += self.end_transitions
        # backtrace with gather, from each sequence's last valid step
        seq_ends = mask.long().sum(dim=0) - 1
        best_last = score.argmax(dim=1)
        tags = [best_last]
        cur = best_last
        for i in range(seq_length - 2, -1, -1):
            prev = history[i].gather(1, cur.unsqueeze(1)).squeeze(1)
            cur = torch.where(seq_ends > i, prev, cur)
            tags.append(cur)
        return torch.stack(tags[::-1], dim=1), score.max(dim=1).values


def crf():
    ids = ids_with_padding(pad=0)
    return CRFTagger(), (ids, mask_of(ids, 0))
