"""Efficient-attention, token-mixing, tabular, forecasting and sparse-activation blocks written
small the way their public repositories write them: Transformer-XL's relative shift, ALiBi
(BLOOM's slopes), Longformer's sliding window with global tokens, Linformer, Performer's FAVOR+,
Reformer's LSH bucketing, Nystromformer, RWKV-4, RetNet's parallel retention, MLP-Mixer, gMLP,
FT-Transformer, Informer's ProbSparse attention, N-BEATS, sparsemax / entmax-1.5 and a DETR
decoder head.  Seeded weights (random features and rotations fixed buffers), eval mode, small
inputs: each exports and runs in seconds.  Results in docs/conformance.md ("Whole models a user
brings (session 40, efficient attention)").  Export one with
  /usr/bin/python3 tools/export.py traces/models/probe5.py:reformer -o /tmp/reformer
"""
import math

import torch
from torch import nn
import torch.nn.functional as F


# Transformer-XL (kimiyoung/transformer-xl, RelPartialLearnableMultiHeadAttn)

class PositionalEmbedding(nn.Module):
    def __init__(self, demb):
        super().__init__()
        inv_freq = 1 / (10000 ** (torch.arange(0.0, demb, 2.0) / demb))
        self.register_buffer("inv_freq", inv_freq)

    def forward(self, pos_seq):
        sinusoid_inp = torch.ger(pos_seq, self.inv_freq)
        return torch.cat([sinusoid_inp.sin(), sinusoid_inp.cos()], dim=-1)[:, None, :]


class RelPartialLearnableMHA(nn.Module):
    def __init__(self, n_head=4, d_model=64, d_head=16):
        super().__init__()
        self.n_head, self.d_head = n_head, d_head
        self.qkv_net = nn.Linear(d_model, 3 * n_head * d_head, bias=False)
        self.r_net = nn.Linear(d_model, n_head * d_head, bias=False)
        self.o_net = nn.Linear(n_head * d_head, d_model, bias=False)
        self.layer_norm = nn.LayerNorm(d_model)
        self.r_w_bias = nn.Parameter(0.1 * torch.randn(n_head, d_head))
        self.r_r_bias = nn.Parameter(0.1 * torch.randn(n_head, d_head))
        self.scale = 1 / (d_head ** 0.5)
        self.pos_emb = PositionalEmbedding(d_model)

    def _rel_shift(self, x):
        zero_pad = torch.zeros((x.size(0), 1, *x.size()[2:]), device=x.device, dtype=x.dtype)
        x_padded = torch.cat([zero_pad, x], dim=1)
        x_padded = x_padded.view(x.size(1) + 1, x.size(0), *x.size()[2:])
        return x_padded[1:].view_as(x)

    def forward(self, w, attn_mask):
        qlen, bsz = w.size(0), w.size(1)
        pos_seq = torch.arange(qlen - 1, -1, -1.0)
        r = self.pos_emb(pos_seq)
        w_heads = self.qkv_net(w)
        r_head_k = self.r_net(r)
        w_head_q, w_head_k, w_head_v = torch.chunk(w_heads, 3, dim=-1)
        klen = w_head_k.size(0)
        w_head_q = w_head_q.view(qlen, bsz, self.n_head, self.d_head)
        w_head_k = w_head_k.view(klen, bsz, self.n_head, self.d_head)
        w_head_v = w_head_v.view(klen, bsz, self.n_head, self.d_head)
        r_head_k = r_head_k.view(qlen, self.n_head, self.d_head)
        AC = torch.einsum("ibnd,jbnd->ijbn", (w_head_q + self.r_w_bias, w_head_k))
        BD = torch.einsum("ibnd,jnd->ijbn", (w_head_q + self.r_r_bias, r_head_k))
        BD = self._rel_shift(BD)
        attn_score = (AC + BD) * self.scale
        attn_score = attn_score.float().masked_fill(attn_mask[:, :, None, None], -float("inf"))
        attn_prob = F.softmax(attn_score, dim=1)
        attn_vec = torch.einsum("ijbn,jbnd->ibnd", (attn_prob, w_head_v))
        attn_vec = attn_vec.contiguous().view(qlen, bsz, self.n_head * self.d_head)
        return self.layer_norm(w + self.o_net(attn_vec))


class TXL(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = RelPartialLearnableMHA()

    def forward(self, w):
        qlen = w.size(0)
        dec_attn_mask = torch.triu(w.new_ones(qlen, qlen), diagonal=1).bool()
        return self.attn(w, dec_attn_mask)


def txl():
    torch.manual_seed(0)
    return TXL().eval(), (torch.randn(12, 2, 64),)


# ALiBi (BLOOM's slopes; the bias from positions as in ofirpress/attention_with_linear_biases)

def _get_slopes(n):
    def power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start ** i for i in range(n)]
    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + _get_slopes(2 * closest)[0::2][: n - closest]


class AlibiAttention(nn.Module):
    def __init__(self, d=48, heads=6):
        super().__init__()
        self.h, self.dh = heads, d // heads
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.register_buffer("slopes", torch.tensor(_get_slopes(heads)))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.h, self.dh).permute(2, 0, 3, 1, 4)
        pos = torch.arange(T, device=x.device)
        rel = pos[None, :] - pos[:, None]
        alibi = self.slopes[:, None, None] * rel[None].float()
        att = q @ k.transpose(-2, -1) / math.sqrt(self.dh) + alibi
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~causal, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        return self.out(y)


def alibi():
    torch.manual_seed(0)
    return AlibiAttention().eval(), (torch.randn(2, 10, 48),)


# Longformer: sliding-window attention plus global tokens (separate global projections)

class LongformerSelfAttention(nn.Module):
    def __init__(self, d=64, heads=4, window=2):
        super().__init__()
        self.h, self.dh, self.w = heads, d // heads, window
        self.query, self.key, self.value = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.query_global, self.key_global = nn.Linear(d, d), nn.Linear(d, d)
        self.value_global = nn.Linear(d, d)
        self.out = nn.Linear(d, d)

    def _heads(self, t):
        B, T, _ = t.shape
        return t.view(B, T, self.h, self.dh).transpose(1, 2)

    def forward(self, x, global_mask):
        B, T, C = x.shape
        q = self._heads(self.query(x)) / math.sqrt(self.dh)
        k, v = self._heads(self.key(x)), self._heads(self.value(x))
        i = torch.arange(T)
        band = (i[:, None] - i[None, :]).abs() <= self.w
        is_global = global_mask.bool()
        allowed = band[None] | is_global[:, None, :]
        scores = (q @ k.transpose(-1, -2)).masked_fill(~allowed[:, None], float("-inf"))
        local = (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)
        qg = self._heads(self.query_global(x)) / math.sqrt(self.dh)
        kg, vg = self._heads(self.key_global(x)), self._heads(self.value_global(x))
        glob = ((qg @ kg.transpose(-1, -2)).softmax(-1) @ vg).transpose(1, 2).reshape(B, T, C)
        y = torch.where(is_global[..., None], glob, local)
        return self.out(y)


def longformer():
    torch.manual_seed(0)
    g = torch.zeros(2, 16, dtype=torch.long)
    g[:, 0] = 1
    g[1, 7] = 1
    return LongformerSelfAttention().eval(), (torch.randn(2, 16, 64), g)


# Linformer (lucidrains/linformer): keys and values projected along the sequence

class LinformerSelfAttention(nn.Module):
    def __init__(self, dim=64, seq_len=32, k=8, heads=4):
        super().__init__()
        self.heads, self.dim_head, self.seq_len, self.k = heads, dim // heads, seq_len, k
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_k = nn.Linear(dim, dim, bias=False)
        self.to_v = nn.Linear(dim, dim, bias=False)
        self.proj_k = nn.Parameter(torch.zeros(seq_len, k).uniform_(-1 / math.sqrt(k), 1 / math.sqrt(k)))
        self.proj_v = nn.Parameter(torch.zeros(seq_len, k).uniform_(-1 / math.sqrt(k), 1 / math.sqrt(k)))
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, d, d_h, h, k = *x.shape, self.dim_head, self.heads, self.k
        queries = self.to_q(x)
        keys, values = self.to_k(x), self.to_v(x)
        proj_seq_len = lambda args: torch.einsum("bnd,nk->bkd", *args)
        keys, values = map(proj_seq_len, zip((keys, values), (self.proj_k, self.proj_v)))
        queries = queries.reshape(b, n, h, -1).transpose(1, 2)
        merge = lambda t: t.reshape(b, k, h, d_h).transpose(1, 2)
        keys, values = map(merge, (keys, values))
        dots = torch.einsum("bhnd,bhkd->bhnk", queries, keys) * (d_h ** -0.5)
        attn = dots.softmax(dim=-1)
        out = torch.einsum("bhnk,bhkd->bhnd", attn, values)
        out = out.transpose(1, 2).reshape(b, n, -1)
        return self.to_out(out)


def linformer():
    torch.manual_seed(0)
    return LinformerSelfAttention().eval(), (torch.randn(2, 32, 64),)


# Performer FAVOR+ (lucidrains/performer-pytorch softmax_kernel, non-causal linear attention)

def _orthogonal_matrix_chunk(cols):
    unstructured_block = torch.randn((cols, cols))
    q, r = torch.linalg.qr(unstructured_block.cpu(), mode="reduced")
    return q.t()


def _gaussian_orthogonal_random_matrix(nb_rows, nb_columns):
    nb_full_blocks = int(nb_rows / nb_columns)
    block_list = [_orthogonal_matrix_chunk(nb_columns) for _ in range(nb_full_blocks)]
    remaining_rows = nb_rows - nb_full_blocks * nb_columns
    if remaining_rows > 0:
        block_list.append(_orthogonal_matrix_chunk(nb_columns)[:remaining_rows])
    final_matrix = torch.cat(block_list)
    multiplier = torch.randn((nb_rows, nb_columns)).norm(dim=1)
    return torch.diag(multiplier) @ final_matrix


def _softmax_kernel(data, projection_matrix, is_query, eps=1e-4):
    b, h, *_ = data.shape
    data_normalizer = data.shape[-1] ** -0.25
    ratio = projection_matrix.shape[0] ** -0.5
    projection = projection_matrix.expand(b, h, *projection_matrix.shape)
    data_dash = torch.einsum("...id,...jd->...ij", (data_normalizer * data), projection)
    diag_data = (data ** 2).sum(dim=-1) / 2.0 * (data_normalizer ** 2)
    diag_data = diag_data.unsqueeze(dim=-1)
    if is_query:
        data_dash = ratio * (torch.exp(data_dash - diag_data -
                                       torch.amax(data_dash, dim=-1, keepdim=True).detach()) + eps)
    else:
        data_dash = ratio * (torch.exp(data_dash - diag_data -
                                       torch.amax(data_dash, dim=(-1, -2), keepdim=True).detach()) + eps)
    return data_dash


def _linear_attention(q, k, v):
    k_cumsum = k.sum(dim=-2)
    D_inv = 1. / torch.einsum("...nd,...d->...n", q, k_cumsum.type_as(q))
    context = torch.einsum("...nd,...ne->...de", k, v)
    return torch.einsum("...de,...nd,...n->...ne", context, q, D_inv)


class PerformerAttention(nn.Module):
    def __init__(self, dim=64, heads=4, nb_features=24):
        super().__init__()
        self.h, self.dh = heads, dim // heads
        self.to_qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.to_out = nn.Linear(dim, dim)
        self.register_buffer("projection_matrix", _gaussian_orthogonal_random_matrix(nb_features, self.dh))

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (t.reshape(b, n, self.h, self.dh).transpose(1, 2) for t in (q, k, v))
        q = _softmax_kernel(q, self.projection_matrix, is_query=True)
        k = _softmax_kernel(k, self.projection_matrix, is_query=False)
        out = _linear_attention(q, k, v)
        return self.to_out(out.transpose(1, 2).reshape(b, n, -1))


def performer():
    torch.manual_seed(0)
    return PerformerAttention().eval(), (torch.randn(2, 20, 64),)


# Reformer LSH attention (lucidrains/reformer-pytorch LSHAttention, one hash round)

def _batched_index_select(values, indices):
    last_dim = values.shape[-1]
    return values.gather(1, indices[:, :, None].expand(-1, -1, last_dim))


class LSHAttention(nn.Module):
    def __init__(self, dim=32, n_buckets=4, bucket_size=4):
        super().__init__()
        self.n_buckets, self.bucket_size = n_buckets, bucket_size
        self.to_qk = nn.Linear(dim, dim, bias=False)
        self.to_v = nn.Linear(dim, dim, bias=False)
        self.register_buffer("random_rotations", torch.randn(1, dim, 1, n_buckets // 2))

    def hash_vectors(self, vecs):
        batch_size = vecs.shape[0]
        rotations_shape = (batch_size, vecs.shape[-1], 1, self.n_buckets // 2)
        random_rotations = self.random_rotations.expand(rotations_shape)
        dropped_vecs = vecs
        rotated_vecs = torch.einsum("btf,bfhi->bhti", dropped_vecs, random_rotations)
        rotated_vecs = torch.cat([rotated_vecs, -rotated_vecs], dim=-1)
        buckets = torch.argmax(rotated_vecs, dim=-1)
        offsets = torch.arange(1, device=vecs.device)
        offsets = torch.reshape(offsets * self.n_buckets, (1, -1, 1))
        return torch.reshape(buckets + offsets, (batch_size, -1,))

    def forward(self, x):
        qk, v = self.to_qk(x), self.to_v(x)
        batch_size, seqlen, dim = qk.shape
        buckets = self.hash_vectors(qk)
        ticker = torch.arange(seqlen, device=x.device).unsqueeze(0).expand_as(buckets)
        buckets_and_t = seqlen * buckets + (ticker % seqlen)
        buckets_and_t = buckets_and_t.detach()
        sbuckets_and_t, sticker = torch.sort(buckets_and_t, dim=-1)
        _, undo_sort = sticker.sort(dim=-1)
        st = (sticker % seqlen)
        sqk = _batched_index_select(qk, st)
        sv = _batched_index_select(v, st)
        chunk_size = seqlen // self.bucket_size
        bq_t = bkv_t = torch.reshape(st, (batch_size, chunk_size, -1))
        bqk = torch.reshape(sqk, (batch_size, chunk_size, -1, dim))
        bv = torch.reshape(sv, (batch_size, chunk_size, -1, dim))
        bq = bqk
        bk = F.normalize(bqk, p=2, dim=-1).type_as(bq)

        def look_one_back(x):
            x_extra = torch.cat([x[:, -1:, ...], x[:, :-1, ...]], dim=1)
            return torch.cat([x, x_extra], dim=2)

        bk, bv, bkv_t = look_one_back(bk), look_one_back(bv), look_one_back(bkv_t)
        dots = torch.einsum("bhie,bhje->bhij", bq, bk) * (dim ** -0.5)
        self_mask = bq_t[:, :, :, None] == bkv_t[:, :, None, :]
        dots.masked_fill_(self_mask, -5e4)
        dots_logsumexp = torch.logsumexp(dots, dim=-1, keepdim=True)
        dots = torch.exp(dots - dots_logsumexp).type_as(dots)
        bo = torch.einsum("buij,buje->buie", dots, bv)
        so = torch.reshape(bo, (batch_size, -1, dim))
        return _batched_index_select(so, undo_sort)


def reformer():
    torch.manual_seed(0)
    return LSHAttention().eval(), (torch.randn(2, 16, 32),)


# Nystromformer (mlpen/Nystromformer NystromAttention, iterative pseudo-inverse)

class NystromAttention(nn.Module):
    def __init__(self, dim=64, heads=4, num_landmarks=4, seq_len=16):
        super().__init__()
        self.h, self.dh, self.m, self.seq_len = heads, dim // heads, num_landmarks, seq_len
        self.W_q, self.W_k, self.W_v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.ff = nn.Linear(dim, dim)

    def iterative_inv(self, mat, n_iter=6):
        I = torch.eye(mat.size(-1), device=mat.device)
        K = mat
        V = 1 / torch.max(torch.sum(K, dim=-2)) * K.transpose(-1, -2)
        for _ in range(n_iter):
            KV = torch.matmul(K, V)
            V = torch.matmul(0.25 * V, 13 * I - torch.matmul(KV, 15 * I - torch.matmul(KV, 7 * I - KV)))
        return V

    def forward(self, X, mask):
        B, T, C = X.shape
        sp = lambda t: t.view(B, T, self.h, self.dh).transpose(1, 2)
        Q, K, V = sp(self.W_q(X)), sp(self.W_k(X)), sp(self.W_v(X))
        Q = Q * mask[:, None, :, None] / math.sqrt(math.sqrt(self.dh))
        K = K * mask[:, None, :, None] / math.sqrt(math.sqrt(self.dh))
        Q_landmarks = Q.reshape(B, self.h, self.m, self.seq_len // self.m, self.dh).mean(dim=-2)
        K_landmarks = K.reshape(B, self.h, self.m, self.seq_len // self.m, self.dh).mean(dim=-2)
        kernel_1 = F.softmax(torch.matmul(Q, K_landmarks.transpose(-1, -2)), dim=-1)
        kernel_2 = F.softmax(torch.matmul(Q_landmarks, K_landmarks.transpose(-1, -2)), dim=-1)
        kernel_3 = F.softmax(torch.matmul(Q_landmarks, K.transpose(-1, -2)) - 1e9 * (1 - mask[:, None, None, :]), dim=-1)
        out = torch.matmul(torch.matmul(kernel_1, self.iterative_inv(kernel_2)), torch.matmul(kernel_3, V))
        return self.ff(out.transpose(1, 2).reshape(B, T, C))


def nystrom():
    torch.manual_seed(0)
    mask = torch.ones(2, 16)
    mask[1, 13:] = 0
    return NystromAttention().eval(), (torch.randn(2, 16, 64), mask)


# RWKV-4 (BlinkDL/RWKV-LM, the recurrent "GPT mode" of RWKV_TimeMix / RWKV_ChannelMix)

class RWKVBlock(nn.Module):
    def __init__(self, n_embd=32):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
        self.time_shift = nn.ZeroPad2d((0, 0, 1, -1))
        ratio = torch.arange(n_embd) / n_embd
        self.time_decay = nn.Parameter(-5 + 8 * ratio ** 0.7)
        self.time_first = nn.Parameter(torch.ones(n_embd) * math.log(0.3) + 0.1 * torch.randn(n_embd))
        self.time_mix_k = nn.Parameter(ratio ** 0.5)
        self.time_mix_v = nn.Parameter(ratio ** 0.5 + 0.1)
        self.time_mix_r = nn.Parameter(0.5 * ratio ** 0.5)
        self.key = nn.Linear(n_embd, n_embd, bias=False)
        self.value = nn.Linear(n_embd, n_embd, bias=False)
        self.receptance = nn.Linear(n_embd, n_embd, bias=False)
        self.output = nn.Linear(n_embd, n_embd, bias=False)
        self.cm_mix_k = nn.Parameter(ratio ** 0.5)
        self.cm_mix_r = nn.Parameter(ratio ** 0.5)
        self.cm_key = nn.Linear(n_embd, 4 * n_embd, bias=False)
        self.cm_receptance = nn.Linear(n_embd, n_embd, bias=False)
        self.cm_value = nn.Linear(4 * n_embd, n_embd, bias=False)

    def wkv(self, w, u, k, v):
        B, T, C = k.shape
        aa = torch.zeros(B, C)
        bb = torch.zeros(B, C)
        pp = torch.full((B, C), -1e38)
        w = -torch.exp(w)
        out = []
        for t in range(T):
            kk, vv = k[:, t], v[:, t]
            ww = u + kk
            p = torch.maximum(pp, ww)
            e1, e2 = torch.exp(pp - p), torch.exp(ww - p)
            out.append((e1 * aa + e2 * vv) / (e1 * bb + e2))
            ww = pp + w
            p = torch.maximum(ww, kk)
            e1, e2 = torch.exp(ww - p), torch.exp(kk - p)
            aa, bb, pp = e1 * aa + e2 * vv, e1 * bb + e2, p
        return torch.stack(out, dim=1)

    def time_mix(self, x):
        xx = self.time_shift(x)
        xk = x * self.time_mix_k + xx * (1 - self.time_mix_k)
        xv = x * self.time_mix_v + xx * (1 - self.time_mix_v)
        xr = x * self.time_mix_r + xx * (1 - self.time_mix_r)
        k, v, sr = self.key(xk), self.value(xv), torch.sigmoid(self.receptance(xr))
        return self.output(sr * self.wkv(self.time_decay, self.time_first, k, v))

    def channel_mix(self, x):
        xx = self.time_shift(x)
        xk = x * self.cm_mix_k + xx * (1 - self.cm_mix_k)
        xr = x * self.cm_mix_r + xx * (1 - self.cm_mix_r)
        k = torch.square(torch.relu(self.cm_key(xk)))
        return torch.sigmoid(self.cm_receptance(xr)) * self.cm_value(k)

    def forward(self, x):
        x = x + self.time_mix(self.ln1(x))
        return x + self.channel_mix(self.ln2(x))


def rwkv():
    torch.manual_seed(0)
    return RWKVBlock().eval(), (torch.randn(2, 8, 32),)


# RetNet (microsoft/torchscale MultiScaleRetention, parallel form)

class MultiScaleRetention(nn.Module):
    def __init__(self, d=64, heads=4):
        super().__init__()
        self.h, self.dh = heads, d // heads
        self.q_proj, self.k_proj = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
        self.v_proj, self.g_proj = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
        self.out_proj = nn.Linear(d, d, bias=False)
        self.group_norm = nn.LayerNorm(self.dh, elementwise_affine=False, eps=1e-6)
        angle = 1.0 / (10000 ** torch.linspace(0, 1, self.dh // 2))
        self.register_buffer("angle", angle.unsqueeze(-1).repeat(1, 2).flatten())
        self.register_buffer("decay", torch.log(1 - 2 ** (-5 - torch.arange(heads, dtype=torch.float))))

    @staticmethod
    def rotate_every_two(x):
        x1, x2 = x[:, :, :, ::2], x[:, :, :, 1::2]
        return torch.stack((-x2, x1), dim=-1).flatten(-2)

    def theta_shift(self, x, sin, cos):
        return (x * cos) + (self.rotate_every_two(x) * sin)

    def forward(self, x):
        bsz, slen, _ = x.shape
        index = torch.arange(slen).to(self.decay)
        sin, cos = torch.sin(index[:, None] * self.angle[None, :]), torch.cos(index[:, None] * self.angle[None, :])
        mask = torch.tril(torch.ones(slen, slen).to(self.decay))
        mask = torch.masked_fill(index[:, None] - index[None, :], ~mask.bool(), float("inf"))
        mask = torch.exp(mask * self.decay[:, None, None])
        mask = torch.nan_to_num(mask)
        mask = mask / mask.sum(dim=-1, keepdim=True).sqrt()
        q, k, v, g = self.q_proj(x), self.k_proj(x) * self.dh ** -0.5, self.v_proj(x), self.g_proj(x)
        q = q.view(bsz, slen, self.h, self.dh).transpose(1, 2)
        k = k.view(bsz, slen, self.h, self.dh).transpose(1, 2)
        qr, kr = self.theta_shift(q, sin, cos), self.theta_shift(k, sin, cos)
        vr = v.view(bsz, slen, self.h, self.dh).transpose(1, 2)
        qk_mat = qr @ kr.transpose(-1, -2) * mask
        qk_mat = qk_mat / qk_mat.detach().abs().sum(dim=-1, keepdim=True).clamp(min=1)
        output = torch.matmul(qk_mat, vr).transpose(1, 2)
        output = self.group_norm(output).reshape(bsz, slen, self.h * self.dh)
        return self.out_proj(F.silu(g) * output)


def retnet():
    torch.manual_seed(0)
    return MultiScaleRetention().eval(), (torch.randn(2, 12, 64),)


# MLP-Mixer (lucidrains/mlp-mixer-pytorch style, patches by a strided conv)

class MixerBlock(nn.Module):
    def __init__(self, tokens, dim):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.token_mlp = nn.Sequential(nn.Linear(tokens, 2 * tokens), nn.GELU(), nn.Linear(2 * tokens, tokens))
        self.channel_mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        x = x + self.token_mlp(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_mlp(self.norm2(x))


class MLPMixer(nn.Module):
    def __init__(self, dim=32, patch=4, image=16, depth=2, classes=10):
        super().__init__()
        self.stem = nn.Conv2d(3, dim, patch, stride=patch)
        tokens = (image // patch) ** 2
        self.blocks = nn.Sequential(*[MixerBlock(tokens, dim) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.stem(x).flatten(2).transpose(1, 2)
        x = self.norm(self.blocks(x))
        return self.head(x.mean(dim=1))


def mixer():
    torch.manual_seed(0)
    return MLPMixer().eval(), (torch.randn(2, 3, 16, 16),)


# gMLP (lucidrains/g-mlp-pytorch SpatialGatingUnit, Conv1d over the sequence)

class SpatialGatingUnit(nn.Module):
    def __init__(self, dim, seq_len, causal=True):
        super().__init__()
        self.causal, self.seq_len = causal, seq_len
        self.norm = nn.LayerNorm(dim // 2)
        self.proj = nn.Conv1d(seq_len, seq_len, 1)
        nn.init.uniform_(self.proj.weight, -1e-3 / seq_len, 1e-3 / seq_len)
        nn.init.constant_(self.proj.bias, 1.)

    def forward(self, x):
        n = x.shape[1]
        res, gate = x.chunk(2, dim=-1)
        gate = self.norm(gate)
        weight, bias = self.proj.weight, self.proj.bias
        if self.causal:
            weight, bias = weight[:n, :n], bias[:n]
            mask = torch.ones(weight.shape[:2], device=x.device).triu_(1).bool()
            weight = weight.masked_fill(mask[..., None], 0.)
        gate = F.conv1d(gate, weight, bias)
        return gate * res


class GMLP(nn.Module):
    def __init__(self, num_tokens=50, dim=32, seq_len=12, depth=2):
        super().__init__()
        self.emb = nn.Embedding(num_tokens, dim)
        self.layers = nn.ModuleList([nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, 4 * dim), nn.GELU(),
                                                   SpatialGatingUnit(4 * dim, seq_len), nn.Linear(2 * dim, dim))
                                     for _ in range(depth)])
        self.to_logits = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, num_tokens))

    def forward(self, x):
        x = self.emb(x)
        for layer in self.layers:
            x = x + layer(x)
        return self.to_logits(x)


def gmlp():
    torch.manual_seed(0)
    return GMLP().eval(), (torch.randint(0, 50, (2, 12)),)


# FT-Transformer (yandex-research/rtdl FeatureTokenizer + CLS)

class FeatureTokenizer(nn.Module):
    def __init__(self, d_numerical, categories, d_token):
        super().__init__()
        category_offsets = torch.tensor([0] + categories[:-1]).cumsum(0)
        self.register_buffer("category_offsets", category_offsets)
        self.category_embeddings = nn.Embedding(sum(categories), d_token)
        self.weight = nn.Parameter(torch.randn(d_numerical + 1, d_token) / math.sqrt(d_token))
        self.bias = nn.Parameter(torch.randn(d_numerical + len(categories), d_token) / math.sqrt(d_token))

    def forward(self, x_num, x_cat):
        x_num = torch.cat([torch.ones(len(x_num), 1, device=x_num.device), x_num], dim=1)
        x = self.weight[None] * x_num[:, :, None]
        x = torch.cat([x, self.category_embeddings(x_cat + self.category_offsets[None])], dim=1)
        bias = torch.cat([torch.zeros(1, self.bias.shape[1], device=x.device), self.bias])
        return x + bias[None]


class FTTransformer(nn.Module):
    def __init__(self, d_numerical=5, categories=(3, 7, 4), d_token=32, n_layers=2, d_out=1):
        super().__init__()
        self.tokenizer = FeatureTokenizer(d_numerical, list(categories), d_token)
        layer = nn.TransformerEncoderLayer(d_token, 4, 2 * d_token, dropout=0.0, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, n_layers)
        self.last_normalization = nn.LayerNorm(d_token)
        self.head = nn.Linear(d_token, d_out)

    def forward(self, x_num, x_cat):
        x = self.encoder(self.tokenizer(x_num, x_cat))
        x = x[:, 0]
        x = F.relu(self.last_normalization(x))
        return self.head(x).squeeze(-1)


def ft_transformer():
    torch.manual_seed(0)
    x_cat = torch.stack([torch.randint(0, c, (8,)) for c in (3, 7, 4)], dim=1)
    return FTTransformer().eval(), (torch.randn(8, 5), x_cat)


# Informer ProbSparse self-attention (zhouhaoyi/Informer2020 ProbAttention, the sample fixed)

class ProbAttention(nn.Module):
    def __init__(self, L=24, d=32, heads=4, factor=2):
        super().__init__()
        self.h, self.dh, self.factor = heads, d // heads, factor
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        U_part = factor * int(math.ceil(math.log(L)))
        self.register_buffer("index_sample", torch.randint(L, (L, U_part)))

    def _prob_QK(self, Q, K, n_top):
        B, H, L_K, E = K.shape
        _, _, L_Q, _ = Q.shape
        K_expand = K.unsqueeze(-3).expand(B, H, L_Q, L_K, E)
        K_sample = K_expand[:, :, torch.arange(L_Q).unsqueeze(1), self.index_sample, :]
        Q_K_sample = torch.matmul(Q.unsqueeze(-2), K_sample.transpose(-2, -1)).squeeze(-2)
        M = Q_K_sample.max(-1)[0] - torch.div(Q_K_sample.sum(-1), L_K)
        M_top = M.topk(n_top, sorted=False)[1]
        Q_reduce = Q[torch.arange(B)[:, None, None], torch.arange(H)[None, :, None], M_top, :]
        Q_K = torch.matmul(Q_reduce, K.transpose(-2, -1))
        return Q_K, M_top

    def forward(self, x):
        B, L, _ = x.shape
        sp = lambda t: t.view(B, L, self.h, self.dh).transpose(1, 2)
        queries, keys, values = sp(self.q(x)), sp(self.k(x)), sp(self.v(x))
        u = self.factor * int(math.ceil(math.log(L)))
        scores_top, index = self._prob_QK(queries, keys, n_top=u)
        scores_top = scores_top * (1. / math.sqrt(self.dh))
        V_sum = values.mean(dim=-2)
        context = V_sum.unsqueeze(-2).expand(B, self.h, L, V_sum.shape[-1]).clone()
        attn = torch.softmax(scores_top, dim=-1)
        context[torch.arange(B)[:, None, None], torch.arange(self.h)[None, :, None], index, :] = \
            torch.matmul(attn, values).type_as(context)
        return self.o(context.transpose(1, 2).reshape(B, L, -1))


def informer():
    torch.manual_seed(0)
    return ProbAttention().eval(), (torch.randn(2, 24, 32),)


# N-BEATS (philipperemy/n-beats style: generic, trend and seasonality blocks)

def _linspace(backcast_length, forecast_length):
    lin_space = torch.linspace(-backcast_length, forecast_length, backcast_length + forecast_length)
    return lin_space[:backcast_length] / forecast_length, lin_space[backcast_length:] / forecast_length


class NBeatsBlock(nn.Module):
    def __init__(self, kind, units, thetas_dim, backcast_length, forecast_length):
        super().__init__()
        self.kind = kind
        self.fc = nn.Sequential(nn.Linear(backcast_length, units), nn.ReLU(), nn.Linear(units, units), nn.ReLU(),
                                nn.Linear(units, units), nn.ReLU(), nn.Linear(units, units), nn.ReLU())
        self.theta_b_fc = nn.Linear(units, thetas_dim, bias=False)
        self.theta_f_fc = nn.Linear(units, thetas_dim, bias=False)
        b_ls, f_ls = _linspace(backcast_length, forecast_length)
        if kind == "trend":
            self.register_buffer("T_b", torch.stack([b_ls ** i for i in range(thetas_dim)]))
            self.register_buffer("T_f", torch.stack([f_ls ** i for i in range(thetas_dim)]))
        elif kind == "seasonality":
            p1, p2 = (thetas_dim // 2, thetas_dim // 2) if thetas_dim % 2 == 0 else (thetas_dim // 2, thetas_dim // 2 + 1)
            sb = lambda t: torch.cat([torch.stack([torch.cos(2 * math.pi * i * t) for i in range(p1)]),
                                      torch.stack([torch.sin(2 * math.pi * i * t) for i in range(p2)])])
            self.register_buffer("T_b", sb(b_ls))
            self.register_buffer("T_f", sb(f_ls))
        else:
            self.backcast_fc = nn.Linear(thetas_dim, backcast_length)
            self.forecast_fc = nn.Linear(thetas_dim, forecast_length)

    def forward(self, x):
        x = self.fc(x)
        theta_b, theta_f = self.theta_b_fc(x), self.theta_f_fc(x)
        if self.kind == "generic":
            return self.backcast_fc(theta_b), self.forecast_fc(theta_f)
        return theta_b.mm(self.T_b), theta_f.mm(self.T_f)


class NBeats(nn.Module):
    def __init__(self, backcast_length=20, forecast_length=5):
        super().__init__()
        self.forecast_length = forecast_length
        self.blocks = nn.ModuleList([NBeatsBlock("trend", 32, 4, backcast_length, forecast_length),
                                     NBeatsBlock("seasonality", 32, 8, backcast_length, forecast_length),
                                     NBeatsBlock("generic", 32, 8, backcast_length, forecast_length)])

    def forward(self, backcast):
        forecast = torch.zeros(backcast.size(0), self.forecast_length)
        for block in self.blocks:
            b, f = block(backcast)
            backcast = backcast - b
            forecast = forecast + f
        return backcast, forecast


def nbeats():
    torch.manual_seed(0)
    return NBeats().eval(), (torch.randn(4, 20),)


# sparsemax and entmax-1.5 (deep-spin/entmax, the sort-based thresholds)

def _make_ix_like(X, dim):
    d = X.size(dim)
    rho = torch.arange(1, d + 1, device=X.device, dtype=X.dtype)
    view = [1] * X.dim()
    view[0] = -1
    return rho.view(view).transpose(0, dim)


def sparsemax_fn(X, dim=-1):
    max_val, _ = X.max(dim=dim, keepdim=True)
    X = X - max_val
    topk, _ = torch.sort(X, dim=dim, descending=True)
    topk_cumsum = topk.cumsum(dim) - 1
    rhos = _make_ix_like(topk, dim)
    support = rhos * topk > topk_cumsum
    support_size = support.sum(dim=dim).unsqueeze(dim)
    tau = topk_cumsum.gather(dim, support_size - 1)
    tau /= support_size.to(X.dtype)
    return torch.clamp(X - tau, min=0)


def entmax15_fn(X, dim=-1):
    max_val, _ = X.max(dim=dim, keepdim=True)
    X = X - max_val
    X = X / 2
    Xsrt, _ = torch.sort(X, dim=dim, descending=True)
    rho = _make_ix_like(X, dim)
    mean = Xsrt.cumsum(dim) / rho
    mean_sq = (Xsrt ** 2).cumsum(dim) / rho
    ss = rho * (mean_sq - mean ** 2)
    delta = (1 - ss) / rho
    delta_nz = torch.clamp(delta, 0)
    tau = mean - torch.sqrt(delta_nz)
    support_size = (tau <= Xsrt).sum(dim).unsqueeze(dim)
    tau_star = tau.gather(dim, support_size - 1)
    return torch.clamp(X - tau_star, min=0) ** 2


class SparseHeads(nn.Module):
    """A sparsemax attention over 10 keys and an entmax-1.5 classifier over 12 classes."""

    def __init__(self, d=16):
        super().__init__()
        self.q, self.k = nn.Linear(d, d), nn.Linear(d, d)
        self.cls = nn.Linear(d, 12)

    def forward(self, x):
        att = sparsemax_fn(self.q(x) @ self.k(x).transpose(1, 2) / 2.0, dim=-1)
        h = att @ x
        return att, entmax15_fn(2.0 * self.cls(h), dim=-1)


def sparsemax():
    torch.manual_seed(0)
    return SparseHeads().eval(), (torch.randn(2, 10, 16),)


# DETR decoder head (facebookresearch/detr: learned queries, q = k = tgt + query_pos)

class DetrDecoderLayer(nn.Module):
    def __init__(self, d_model, nhead, dim_feedforward):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, nhead)
        self.multihead_attn = nn.MultiheadAttention(d_model, nhead)
        self.linear1, self.linear2 = nn.Linear(d_model, dim_feedforward), nn.Linear(dim_feedforward, d_model)
        self.norm1, self.norm2, self.norm3 = nn.LayerNorm(d_model), nn.LayerNorm(d_model), nn.LayerNorm(d_model)

    def forward(self, tgt, memory, pos, query_pos):
        q = k = tgt + query_pos
        tgt = self.norm1(tgt + self.self_attn(q, k, value=tgt)[0])
        tgt2 = self.multihead_attn(query=tgt + query_pos, key=memory + pos, value=memory)[0]
        tgt = self.norm2(tgt + tgt2)
        return self.norm3(tgt + self.linear2(F.relu(self.linear1(tgt))))


class PositionEmbeddingSine(nn.Module):
    def __init__(self, num_pos_feats=16, temperature=10000):
        super().__init__()
        self.num_pos_feats, self.temperature = num_pos_feats, temperature

    def forward(self, x):
        not_mask = torch.ones(x.shape[0], x.shape[2], x.shape[3], device=x.device)
        y_embed = not_mask.cumsum(1, dtype=torch.float32)
        x_embed = not_mask.cumsum(2, dtype=torch.float32)
        eps, scale = 1e-6, 2 * math.pi
        y_embed = y_embed / (y_embed[:, -1:, :] + eps) * scale
        x_embed = x_embed / (x_embed[:, :, -1:] + eps) * scale
        dim_t = torch.arange(self.num_pos_feats, dtype=torch.float32, device=x.device)
        dim_t = self.temperature ** (2 * (dim_t // 2) / self.num_pos_feats)
        pos_x = x_embed[:, :, :, None] / dim_t
        pos_y = y_embed[:, :, :, None] / dim_t
        pos_x = torch.stack((pos_x[:, :, :, 0::2].sin(), pos_x[:, :, :, 1::2].cos()), dim=4).flatten(3)
        pos_y = torch.stack((pos_y[:, :, :, 0::2].sin(), pos_y[:, :, :, 1::2].cos()), dim=4).flatten(3)
        return torch.cat((pos_y, pos_x), dim=3).permute(0, 3, 1, 2)


class MLP(nn.Module):
    def __init__(self, input_dim, hidden_dim, output_dim, num_layers):
        super().__init__()
        h = [hidden_dim] * (num_layers - 1)
        self.layers = nn.ModuleList(nn.Linear(n, k) for n, k in zip([input_dim] + h, h + [output_dim]))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = F.relu(layer(x)) if i < len(self.layers) - 1 else layer(x)
        return x


class DETRHead(nn.Module):
    def __init__(self, backbone_ch=16, d=32, num_queries=10, num_classes=5):
        super().__init__()
        self.input_proj = nn.Conv2d(backbone_ch, d, 1)
        self.query_embed = nn.Embedding(num_queries, d)
        self.pos = PositionEmbeddingSine(d // 2)
        self.layers = nn.ModuleList([DetrDecoderLayer(d, 4, 64) for _ in range(2)])
        self.norm = nn.LayerNorm(d)
        self.class_embed = nn.Linear(d, num_classes + 1)
        self.bbox_embed = MLP(d, d, 4, 3)

    def forward(self, features):
        bs = features.shape[0]
        src = self.input_proj(features)
        pos = self.pos(src).flatten(2).permute(2, 0, 1)
        memory = src.flatten(2).permute(2, 0, 1)
        query_pos = self.query_embed.weight.unsqueeze(1).repeat(1, bs, 1)
        tgt = torch.zeros_like(query_pos)
        for layer in self.layers:
            tgt = layer(tgt, memory, pos, query_pos)
        hs = self.norm(tgt).transpose(0, 1)
        return self.class_embed(hs).softmax(-1), self.bbox_embed(hs).sigmoid()


def detr():
    torch.manual_seed(0)
    return DETRHead().eval(), (torch.randn(2, 16, 6, 6),)
