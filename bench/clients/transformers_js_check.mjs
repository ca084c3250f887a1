// Run by bench/clients/transformers_js.py inside a scratch folder that has
// @huggingface/transformers 4.3.1 installed: loads onnxport export folders with no edits.
// argv: <models root> <minilm folder name> <request.json> <result.json> <decoder folder name>...
// request.seq2seq: encoder-decoder folder name → its inputs (text: input_ids + attention_mask; speech:
// input_features; image: pixel_values), generated greedily with AutoModelForSeq2SeqLM /
// AutoModelForSpeechSeq2Seq / AutoModelForVision2Seq.
// request.forward: folder name → {auto, inputs: {name: {dtype, dims, data}}}: one forward, every output returned.
// request.image_text: VLM folder name → its inputs (input_ids, attention_mask, pixel_values[, pixel_attention_mask]),
// generated greedily with AutoModelForImageTextToText (with audio_values: AutoModelForAudioTextToText).
import fs from 'node:fs';
import {
    env, pipeline, AutoModel, AutoModelForCausalLM, AutoModelForCTC, AutoModelForSeq2SeqLM, AutoModelForSpeechSeq2Seq,
    AutoModelForVision2Seq, AutoModelForDepthEstimation, AutoModelForObjectDetection, AutoModelForZeroShotObjectDetection,
    AutoModelForImageSegmentation, AutoModelForUniversalSegmentation, AutoModelForImageToImage, AutoModelForTextToWaveform,
    AutoModelForImageClassification, AutoModelForImageTextToText, AutoModelForAudioTextToText, Tensor,
} from '@huggingface/transformers';

const [root, minilm, requestPath, resultPath, ...decoders] = process.argv.slice(2);
env.localModelPath = root.endsWith('/') ? root : root + '/';
env.allowRemoteModels = false;
const request = JSON.parse(fs.readFileSync(requestPath, 'utf8'));
const result = {};

const extractor = await pipeline('feature-extraction', minilm, { dtype: 'fp32' });
const embeddings = await extractor(request.sentences, { pooling: 'mean', normalize: true });
result.embeddings = embeddings.tolist();

const [batch, length] = [request.input_ids.length, request.input_ids[0].length];
const flat = (rows) => BigInt64Array.from(rows.flat().map((v) => BigInt(v)));
result.generated = {};
for (const name of decoders) {
    const model = await AutoModelForCausalLM.from_pretrained(name, { dtype: 'fp32' });
    const output = await model.generate({
        input_ids: new Tensor('int64', flat(request.input_ids), [batch, length]),
        attention_mask: new Tensor('int64', flat(request.attention_mask), [batch, length]),
        max_new_tokens: request.max_new_tokens,
        min_new_tokens: request.max_new_tokens,
        do_sample: false,
    });
    result.generated[name] = output.tolist().map((row) => row.map((v) => Number(v)));
}
result.seq2seq = {};
for (const [name, inputs] of Object.entries(request.seq2seq ?? {})) {
    const steps = { max_new_tokens: request.seq2seq_new_tokens, min_new_tokens: request.seq2seq_new_tokens, do_sample: false };
    let output;
    if (inputs.pixel_values) {
        const p = inputs.pixel_values;
        const model = await AutoModelForVision2Seq.from_pretrained(name, { dtype: 'fp32' });
        const dims = [p.length, p[0].length, p[0][0].length, p[0][0][0].length];
        output = await model.generate({ pixel_values: new Tensor('float32', Float32Array.from(p.flat(3)), dims), ...steps });
    } else if (inputs.input_values) {
        const v = inputs.input_values;
        const model = await AutoModelForSpeechSeq2Seq.from_pretrained(name, { dtype: 'fp32' });
        const values = new Tensor('float32', Float32Array.from(v.flat(1)), [v.length, v[0].length]);
        output = await model.generate({ input_values: values, ...steps });
    } else if (inputs.input_features) {
        const f = inputs.input_features;
        const model = await AutoModelForSpeechSeq2Seq.from_pretrained(name, { dtype: 'fp32' });
        const features = new Tensor('float32', Float32Array.from(f.flat(2)), [f.length, f[0].length, f[0][0].length]);
        output = await model.generate({ inputs: features, ...steps });
    } else {
        const dims = [inputs.input_ids.length, inputs.input_ids[0].length];
        const model = await AutoModelForSeq2SeqLM.from_pretrained(name, { dtype: 'fp32' });
        output = await model.generate({
            input_ids: new Tensor('int64', flat(inputs.input_ids), dims),
            attention_mask: new Tensor('int64', flat(inputs.attention_mask), dims),
            ...steps,
        });
    }
    result.seq2seq[name] = output.tolist().map((row) => row.map((v) => Number(v)));
}
// {name: {dtype, dims, data}} (bench/clients/transformers_js.py _tensor_json) → {name: Tensor}
const tensors = (inputs) => Object.fromEntries(Object.entries(inputs).map(([key, { dtype, dims, data }]) => [
    key,
    new Tensor(dtype, dtype === 'int64' ? BigInt64Array.from(data.map((v) => BigInt(v)))
        : dtype === 'bool' ? Uint8Array.from(data.map((v) => (v ? 1 : 0))) : Float32Array.from(data), dims),
]));
result.image_text = {};
for (const [name, inputs] of Object.entries(request.image_text ?? {})) {
    const auto = inputs.audio_values ? AutoModelForAudioTextToText : AutoModelForImageTextToText;
    const model = await auto.from_pretrained(name, { dtype: 'fp32' });
    const steps = { max_new_tokens: request.seq2seq_new_tokens, min_new_tokens: request.seq2seq_new_tokens, do_sample: false };
    const output = await model.generate({ ...tensors(inputs), ...steps });
    result.image_text[name] = output.tolist().map((row) => row.map((v) => Number(v)));
}
const autos = {
    AutoModel, AutoModelForCTC, AutoModelForDepthEstimation, AutoModelForObjectDetection,
    AutoModelForZeroShotObjectDetection, AutoModelForImageSegmentation, AutoModelForUniversalSegmentation,
    AutoModelForImageToImage, AutoModelForTextToWaveform, AutoModelForImageClassification,
};
result.forward = {};
for (const [name, { auto, inputs }] of Object.entries(request.forward ?? {})) {
    const model = await autos[auto].from_pretrained(name, { dtype: 'fp32' });
    const outputs = await model(tensors(inputs));
    result.forward[name] = Object.fromEntries(
        Object.entries(outputs).map(([key, t]) => [key, { dims: t.dims, data: Array.from(t.data, Number) }]),
    );
}
// request.codec: audio codec folder name → a waveform; DacModel / MimiModel encode it and decode the codes
result.codec = {};
for (const [name, waveform] of Object.entries(request.codec ?? {})) {
    const model = await AutoModel.from_pretrained(name, { dtype: 'fp32' });
    const encoded = await model.encode({ input_values: tensors({ waveform }).waveform });
    const decoded = await model.decode(encoded);
    const plain = (t) => ({ dims: t.dims, data: Array.from(t.data, Number) });
    result.codec[name] = { audio_codes: plain(encoded.audio_codes), audio_values: plain(decoded.audio_values) };
}
fs.writeFileSync(resultPath, JSON.stringify(result));
