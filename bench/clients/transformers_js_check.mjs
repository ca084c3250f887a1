// Run by bench/clients/transformers_js.py inside a scratch folder that has
// @huggingface/transformers 4.3.1 installed: loads onnxport export folders with no edits.
// argv: <models root> <minilm folder name> <request.json> <result.json> <decoder folder name>...
import fs from 'node:fs';
import { env, pipeline, AutoModelForCausalLM, Tensor } from '@huggingface/transformers';

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
fs.writeFileSync(resultPath, JSON.stringify(result));
