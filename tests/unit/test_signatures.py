from b3os_infer.node.signatures import Signer


def test_round_trip_and_tampering():
    signer = Signer(b"secret")
    signature = signer.sign("I reason.")
    assert signer.verify("I reason.", signature)
    assert not signer.verify("I reason!", signature)
    assert not signer.verify("I reason.", signature[:-2] + "AA")
    assert not Signer(b"other").verify("I reason.", signature)
    assert not signer.verify("I reason.", "not base64 at all!")


def test_omitted_text_may_come_back_empty_but_not_edited():
    signer = Signer(b"secret")
    signature = signer.sign("hidden", omitted=True)
    assert signer.verify("", signature)
    assert signer.verify("hidden", signature)
    assert not signer.verify("edited", signature)
    assert not signer.verify("", signer.sign("shown"))
