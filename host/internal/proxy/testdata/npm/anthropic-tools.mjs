// A tool loop on the official Anthropic client through sextant's
// recording proxy: node anthropic-tools.mjs BASE_URL. The first turn is
// streamed (the tool's input arrives as input_json_delta events), the
// second, given the tool's result, is a whole message. Prints what the
// client saw as one JSON document.
import Anthropic from "@anthropic-ai/sdk";

const [baseURL] = process.argv.slice(2);
const client = new Anthropic({ baseURL, apiKey: "sk-not-a-real-key", maxRetries: 0 });
const opts = { headers: { "X-Sextant-Task": "anthropic-tools" } };
const tools = [{
  name: "get_weather", description: "The current weather in a city",
  input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
}];

const messages = [{ role: "user", content: "What is the weather in Paris?" }];
const stream = client.messages.stream({ model: "claude-test", max_tokens: 256, tools, messages }, opts);
const first = await stream.finalMessage();
messages.push({ role: "assistant", content: first.content });
const results = first.content.filter((b) => b.type === "tool_use").map((b) => ({
  type: "tool_result", tool_use_id: b.id, content: b.input.city === "Paris" ? "sunny and 21 degrees" : "unknown city",
}));
messages.push({ role: "user", content: results });
const second = await client.messages.create({ model: "claude-test", max_tokens: 256, tools, messages }, opts);
process.stdout.write(JSON.stringify([
  { id: first.id, stop: first.stop_reason, content: first.content, usage: first.usage },
  { id: second.id, stop: second.stop_reason, content: second.content, usage: second.usage },
]));
