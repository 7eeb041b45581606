"""A module the scripts import from their own folder, as llm-orc's do."""


def count_words(text):
    return len(text.split())
