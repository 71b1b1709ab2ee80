import pytest

from b3os_infer.errors import InvalidRequest
from b3os_infer.node.chat_template import ChatTemplate

CHATML = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def test_renders_hugging_face_style_chatml():
    template = ChatTemplate(CHATML)
    text = template.render([{"role": "user", "content": "Hi"}])
    assert text == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"


def test_generation_prompt_is_optional():
    template = ChatTemplate(CHATML)
    text = template.render([{"role": "user", "content": "Hi"}], add_generation_prompt=False)
    assert text.endswith("<|im_end|>\n")


def test_trim_and_lstrip_blocks_are_on():
    template = ChatTemplate("{% if true %}\n  x\n{% endif %}\n")
    assert template.render([]) == "  x\n"


def test_special_tokens_tools_and_extra_variables_reach_the_template():
    template = ChatTemplate("{{ bos_token }}{{ tools | tojson }}{{ enable_thinking }}",
                            bos_token="<s>")
    assert template.render([], tools=[{"name": "é"}], enable_thinking=True) == \
        '<s>[{"name": "é"}]True'


def test_raise_exception_becomes_a_client_error():
    template = ChatTemplate("{{ raise_exception('roles must alternate') }}")
    with pytest.raises(InvalidRequest) as info:
        template.render([{"role": "user", "content": "x"}])
    assert "roles must alternate" in info.value.message


def test_the_sandbox_blocks_attribute_escapes():
    template = ChatTemplate("{{ messages.__class__.__mro__ }}")
    with pytest.raises(InvalidRequest):
        template.render([])


def test_templates_cannot_mutate_inputs():
    template = ChatTemplate("{% set _ = messages.append(1) %}{{ messages | length }}")
    with pytest.raises(InvalidRequest):
        template.render([])
