"""The zoo's models: timm vision families at their default input size, and
transformers families from configs shrunk to test size (2 layers, width
64, 4 heads: the architecture's every op, in seconds). Each entry builds
(module, example inputs); the module returns one tensor (a transformers
model's logits or last hidden state), so every form has one output.
"""


class Spec:
    def __init__(self, family, build, batch_of=None):
        self.family = family
        self.build = build
        # batch_of(n, generator): n random examples (BatchNorm statistics);
        # None for models without BatchNorm.
        self.batch_of = batch_of


def _timm(name, family, **kw):
    def shape():
        import timm
        return timm.create_model(name, pretrained=False, **kw).pretrained_cfg["input_size"]

    def build():
        import timm
        import torch
        m = timm.create_model(name, pretrained=False, **kw)
        c, h, w = m.pretrained_cfg["input_size"]
        return m, (torch.randn(1, c, h, w),)

    def batch_of(n, g):
        import torch
        return (torch.randn((n,) + tuple(shape()), generator=g),)

    return Spec(family, build, batch_of)


class _Select:
    """A transformers model as a module of positional tensors returning one
    tensor (`key` of its output)."""

    def __new__(cls, model, names, key):
        import torch

        class Select(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.model = model

            def forward(self, *args):
                return getattr(self.model(**dict(zip(names, args))), key)

        return Select()


SEQ = 16


def _text_inputs(torch, vocab, mask=True):
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(3, vocab, (1, SEQ), generator=g)
    if not mask:
        return (ids,)
    m = torch.ones(1, SEQ, dtype=torch.int64)
    m[0, -3:] = 0  # padding: the mask must matter
    return ids, m


SMALL = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
             vocab_size=1000, max_position_embeddings=64)


def _hf(family, make, names, key="last_hidden_state", inputs=None):
    def build():
        import torch
        import transformers
        model = make(transformers)
        model.config.use_cache = False
        args = inputs(torch) if inputs else _text_inputs(torch, model.config.vocab_size)
        return _Select(model, names, key), args

    return Spec(family, build)


def _encoder(cls, config, **extra):
    return lambda t: getattr(t, cls)(getattr(t, config)(**{**SMALL, **extra}))


def _causal(cls, config, **extra):
    kw = {**SMALL, "num_key_value_heads": 2, **extra}
    return lambda t: getattr(t, cls)(getattr(t, config)(**kw))


def _t5(t):
    return t.T5Model(t.T5Config(d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4,
                                vocab_size=1000, relative_attention_num_buckets=32))


def _bart(t):
    return t.BartModel(t.BartConfig(d_model=64, encoder_layers=2, decoder_layers=2,
                                    encoder_attention_heads=4, decoder_attention_heads=4,
                                    encoder_ffn_dim=128, decoder_ffn_dim=128, vocab_size=1000,
                                    max_position_embeddings=64))


def _seq2seq_inputs(torch):
    ids, mask = _text_inputs(torch, 1000)
    return ids, mask, ids[:, :8].clone()


def _clip(t):
    text = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                vocab_size=1000, max_position_embeddings=64)
    vision = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                  intermediate_size=128, image_size=32, patch_size=8)
    return t.CLIPModel(t.CLIPConfig(text_config=text, vision_config=vision, projection_dim=32))


def _clip_inputs(torch):
    ids, mask = _text_inputs(torch, 1000)
    return ids, torch.randn(1, 3, 32, 32), mask


def _whisper(t):
    return t.WhisperModel(t.WhisperConfig(
        d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, num_mel_bins=16,
        max_source_positions=32, max_target_positions=32, vocab_size=1000, pad_token_id=1,
        bos_token_id=2, eos_token_id=2, decoder_start_token_id=2))


def _wav2vec2(t):
    return t.Wav2Vec2Model(t.Wav2Vec2Config(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
        conv_dim=(32, 32, 32), conv_stride=(5, 2, 2), conv_kernel=(10, 3, 3),
        num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4, vocab_size=32))


MODELS = {
    # timm: at least one model of each vision family the issue names.
    "resnet18": _timm("resnet18", "ResNet"),
    "resnext26ts": _timm("resnext26ts", "ResNeXt"),
    "efficientnet_b0": _timm("efficientnet_b0", "EfficientNet"),
    "tf_efficientnetv2_b0": _timm("tf_efficientnetv2_b0", "EfficientNetV2"),
    "mobilenetv3_small_100": _timm("mobilenetv3_small_100", "MobileNetV3"),
    "mobilenetv4_conv_small": _timm("mobilenetv4_conv_small", "MobileNetV4"),
    "convnext_atto": _timm("convnext_atto", "ConvNeXt"),
    "regnetx_002": _timm("regnetx_002", "RegNet"),
    "densenet121": _timm("densenet121", "DenseNet"),
    "inception_v3": _timm("inception_v3", "Inception"),
    "vit_tiny_patch16_224": _timm("vit_tiny_patch16_224", "ViT"),
    "deit_tiny_patch16_224": _timm("deit_tiny_patch16_224", "DeiT"),
    "swin_tiny_patch4_window7_224": _timm("swin_tiny_patch4_window7_224", "Swin"),
    "mixer_s16_224": _timm("mixer_s16_224", "MLP-Mixer"),
    "levit_128s": _timm("levit_128s", "LeViT"),
    "poolformer_s12": _timm("poolformer_s12", "PoolFormer"),
    "coatnet_nano_rw_224": _timm("coatnet_nano_rw_224", "CoAtNet"),
    "maxvit_nano_rw_256": _timm("maxvit_nano_rw_256", "MaxViT"),
    "efficientformer_l1": _timm("efficientformer_l1", "EfficientFormer"),
    "ghostnet_100": _timm("ghostnet_100", "GhostNet"),
    "hrnet_w18_small": _timm("hrnet_w18_small", "HRNet"),
    "dla34": _timm("dla34", "DLA"),
    "repvgg_a0": _timm("repvgg_a0", "RepVGG"),
    "cspdarknet53": _timm("cspdarknet53", "CSPDarknet"),
    "mobilevit_xxs": _timm("mobilevit_xxs", "MobileViT"),
    "edgenext_xx_small": _timm("edgenext_xx_small", "EdgeNeXt"),
    "fastvit_t8": _timm("fastvit_t8", "FastViT"),
    # transformers: encoders, decoders, encoder-decoders, speech,
    # vision-language.
    "bert": _hf("BERT (encoder)", _encoder("BertModel", "BertConfig"),
                ["input_ids", "attention_mask"]),
    "distilbert": _hf("DistilBERT (encoder)", lambda t: t.DistilBertModel(t.DistilBertConfig(
        dim=64, n_layers=2, n_heads=4, hidden_dim=128, vocab_size=1000,
        max_position_embeddings=64)), ["input_ids", "attention_mask"]),
    "roberta": _hf("RoBERTa (encoder)", _encoder("RobertaModel", "RobertaConfig"),
                   ["input_ids", "attention_mask"]),
    "albert": _hf("ALBERT (encoder)", _encoder("AlbertModel", "AlbertConfig", embedding_size=32),
                  ["input_ids", "attention_mask"]),
    "electra": _hf("ELECTRA (encoder)",
                   _encoder("ElectraModel", "ElectraConfig", embedding_size=32),
                   ["input_ids", "attention_mask"]),
    "deberta_v2": _hf("DeBERTa-v2 (encoder)", _encoder("DebertaV2Model", "DebertaV2Config"),
                      ["input_ids", "attention_mask"]),
    "mobilebert": _hf("MobileBERT (encoder)", _encoder(
        "MobileBertModel", "MobileBertConfig", embedding_size=32, intra_bottleneck_size=32,
        true_hidden_size=32, num_feedforward_networks=2, intermediate_size=64),
        ["input_ids", "attention_mask"]),
    "gpt2": _hf("GPT-2 (decoder)", lambda t: t.GPT2LMHeadModel(t.GPT2Config(
        n_embd=64, n_layer=2, n_head=4, n_positions=64, vocab_size=1000)),
        ["input_ids", "attention_mask"], key="logits"),
    "llama": _hf("LLaMA (decoder)", _causal("LlamaForCausalLM", "LlamaConfig"),
                 ["input_ids", "attention_mask"], key="logits"),
    "mistral": _hf("Mistral (decoder)", _causal("MistralForCausalLM", "MistralConfig"),
                   ["input_ids", "attention_mask"], key="logits"),
    "qwen2": _hf("Qwen2 (decoder)", _causal("Qwen2ForCausalLM", "Qwen2Config"),
                 ["input_ids", "attention_mask"], key="logits"),
    "phi": _hf("Phi (decoder)", _causal("PhiForCausalLM", "PhiConfig"),
               ["input_ids", "attention_mask"], key="logits"),
    "t5": _hf("T5 (encoder-decoder)", _t5, ["input_ids", "attention_mask", "decoder_input_ids"],
              inputs=_seq2seq_inputs),
    "bart": _hf("BART (encoder-decoder)", _bart,
                ["input_ids", "attention_mask", "decoder_input_ids"], inputs=_seq2seq_inputs),
    "clip": _hf("CLIP (vision-language)", _clip, ["input_ids", "pixel_values", "attention_mask"],
                key="logits_per_image", inputs=_clip_inputs),
    "whisper": _hf("Whisper (speech, encoder-decoder)", _whisper,
                   ["input_features", "decoder_input_ids"],
                   inputs=lambda torch: (torch.randn(1, 16, 64),
                                         torch.randint(3, 1000, (1, 8)))),
    "wav2vec2": _hf("Wav2Vec2 (speech)", _wav2vec2, ["input_values"],
                    inputs=lambda torch: (torch.randn(1, 1600),)),
}

# What make test runs (a CNN with BatchNorm, a vision transformer, an
# encoder and a decoder with masks; about a minute).
SUBSET = ["resnet18", "deit_tiny_patch16_224", "bert", "llama"]
