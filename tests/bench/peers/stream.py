"""The official Python clients' bare streaming loops (`openai`, `ollama`): one chat
streamed from the benchmark's fake server, the text accumulated. Prints one JSON line:
tokens, characters, wall and CPU time (user + system, from the OS) around the loop, and
the wall-clock moment of the first token.

Usage: python stream.py <openai|ollama> <base url> <model>
"""

import json
import resource
import sys
import time


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def openai_texts(url, model):
    from openai import OpenAI

    client = OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)

    def loop():
        stream = client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": "Hi"}], stream=True
        )
        for chunk in stream:
            if chunk.choices:
                text = chunk.choices[0].delta.content
                if text:
                    yield text

    return loop


def ollama_texts(url, model):
    from ollama import Client

    client = Client(host=url)

    def loop():
        stream = client.chat(
            model=model, messages=[{"role": "user", "content": "Hi"}], stream=True
        )
        for part in stream:
            text = part.message.content
            if text:
                yield text

    return loop


def main():
    kind, url, model = sys.argv[1:4]
    loop = {"openai": openai_texts, "ollama": ollama_texts}[kind](url, model)
    tokens = chars = 0
    first = None
    cpu, start = cpu_seconds(), time.perf_counter()
    for text in loop():
        if first is None:
            first = time.time_ns()
        tokens += 1
        chars += len(text)
    wall = time.perf_counter() - start
    used = cpu_seconds() - cpu
    print(
        json.dumps(
            {
                "tokens": tokens,
                "chars": chars,
                "wall_s": wall,
                "cpu_s": used,
                "first_token_unix_ns": first or 0,
            }
        )
    )


if __name__ == "__main__":
    main()
