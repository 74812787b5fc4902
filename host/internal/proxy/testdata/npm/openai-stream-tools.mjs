// A streamed tool loop on the official openai client through sextant's
// recording proxy: node openai-stream-tools.mjs BASE_URL. The first
// streamed answer calls get_weather (its arguments arrive in pieces), the
// second, given the tool's result, answers in text. Prints what the
// client assembled as one JSON document; toolCalls counts the tool's
// runs.
import OpenAI from "openai";

const [baseURL] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: "sk-not-a-real-key", maxRetries: 0 });
const opts = { headers: { "X-Sextant-Task": "openai-stream-tools" } };
const tools = [{
  type: "function",
  function: {
    name: "get_weather", description: "The current weather in a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
}];

async function turn(messages) {
  const stream = await client.chat.completions.create({
    model: "gpt-4o-mini", stream: true, stream_options: { include_usage: true },
    tools, tool_choice: "auto", parallel_tool_calls: false, messages,
  }, opts);
  let text = "", finish = null, usage = null, chunks = 0, id = "";
  const calls = [];
  for await (const chunk of stream) {
    chunks++;
    id = chunk.id;
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      if (c.delta?.content) text += c.delta.content;
      for (const tc of c.delta?.tool_calls ?? []) {
        calls[tc.index] ??= { id: "", name: "", arguments: "" };
        if (tc.id) calls[tc.index].id = tc.id;
        if (tc.function?.name) calls[tc.index].name = tc.function.name;
        if (tc.function?.arguments) calls[tc.index].arguments += tc.function.arguments;
      }
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  return { id, text, finish, usage, chunks, calls };
}

const toolCalls = [];
const getWeather = ({ city }) => {
  toolCalls.push(city);
  return city === "Paris" ? "sunny and 21 degrees" : "unknown city";
};

const messages = [{ role: "user", content: "What is the weather in Paris?" }];
const first = await turn(messages);
messages.push({ role: "assistant", content: null, tool_calls: first.calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } })) });
for (const c of first.calls) {
  messages.push({ role: "tool", tool_call_id: c.id, content: getWeather(JSON.parse(c.arguments)) });
}
const second = await turn(messages);
process.stdout.write(JSON.stringify({ turns: [first, second], toolCalls }));
