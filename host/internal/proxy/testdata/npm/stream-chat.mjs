// One streamed chat completion on the official openai client through
// sextant's recording proxy: node stream-chat.mjs BASE_URL TASK. Prints
// what the client saw as one JSON document: every chunk as it came, the
// text, finish reason and usage they add up to; or the error it raised.
import OpenAI from "openai";

const [baseURL, task] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: "sk-not-a-real-key", maxRetries: 0 });

async function main() {
  const chunks = [];
  let text = "", finish = null, usage = null;
  try {
    const stream = await client.chat.completions.create({
      model: "gpt-4o-mini", stream: true, stream_options: { include_usage: true },
      messages: [{ role: "user", content: "Say hi." }],
    }, { headers: { "X-Sextant-Task": task } });
    for await (const chunk of stream) {
      chunks.push(chunk);
      if (chunk.usage) usage = chunk.usage;
      for (const c of chunk.choices) {
        if (c.delta?.content) text += c.delta.content;
        if (c.finish_reason) finish = c.finish_reason;
      }
    }
  } catch (e) {
    return { chunks, text, error: { name: e.constructor.name, status: e.status ?? null, message: e.message } };
  }
  return { chunks, text, finish, usage };
}

main().then(
  (v) => { process.stdout.write(JSON.stringify(v)); },
  (e) => { process.stderr.write(String(e && e.stack || e)); process.exit(1); },
);
