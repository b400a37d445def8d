"""Function words: what a question's search leaves out (query_concepts), per language.

English, German, French and Spanish by word, written casefolded and without diacritics
as words._normalise leaves them (für -> fur, heißt -> heisst). Chinese and Japanese by
character bigram: a bigram of two function characters (kana particles and endings, 的, 吗,
什么) says nothing about a subject. A function word matches many messages of its own
language and none of the subject, so it buries an answer found by meaning under weak
word matches. Only queries are cut: the index keeps every word.
"""

from __future__ import annotations

from collections.abc import Iterable

STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his how
    i if in into is it its itself just me more most my myself no nor not now of off on
    once only or other our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with
    would you your yours yourself yourselves""".split()
)
# English words a question holds that its answer rarely does: asking for the current
# state ("still", "now"), modals, indefinite pronouns ("is someone fixing it?").
_ENGLISH_QUESTION = """still current currently latest anymore us whose may might must
    shall also yet ever else many much someone somebody something anyone anybody anything
    everyone everybody everything nobody nothing"""

FUNCTION_WORDS = {
    "de": frozenset("""der die das den dem des ein eine einen einem einer eines kein keine
        keinen keinem keiner keines ich du er sie es wir ihr mich dich sich uns euch mir dir
        ihm ihn ihnen man mein meine meinen meinem meiner meines dein deine deinen deinem
        deiner deines sein seine seinen seinem seiner seines ihre ihren ihrem ihrer ihres
        unser unsere unseren unserem unserer unseres euer eure euren eurem eurer eures
        dies diese diesen diesem dieser dieses wer wen wem wessen was wo wohin woher wann
        wie warum weshalb wieso welche welcher welches welchen welchem an am auf aus bei
        beim mit nach seit von vom zu zum zur fur uber unter vor neben zwischen durch gegen
        ohne um bis im ins in ab und oder aber denn sondern dass ob wenn als weil da bin
        bist ist sind seid war waren gewesen habe hast hat haben habt hatte hatten werde
        wirst wird werden werdet wurde wurden kann kannst konnen konnte muss mussen soll
        sollte will willst wollen wollte darf mag nicht noch schon jetzt auch nur sehr
        doch mal gerade aktuell derzeit zurzeit momentan inzwischen mehr""".split()),
    "fr": frozenset("""le la les un une des du de au aux je tu il elle on nous vous ils
        elles me te se moi toi lui leur leurs eux y en mon ma mes ton ta tes son sa ses
        notre nos votre vos ce cet cette ces ceci cela ca celui celle ceux celles qui que
        quoi quel quelle quels quelles ou quand comment pourquoi combien lequel laquelle
        a dans pour par avec sans sur sous chez entre vers depuis pendant avant apres et
        mais donc ni car si suis es est sommes etes sont etait etaient ete etre ai as
        avons avez ont avait avaient eu avoir sera seront peut peux pouvez doit dois ne
        pas plus toujours encore deja maintenant actuel actuelle actuellement desormais
        tres aussi""".split()),
    "es": frozenset("""el la los las un una unos unas lo al del yo tu ella usted nosotros
        nosotras vosotros ellos ellas ustedes me te se nos os le les mi ti si mis tus su
        sus nuestro nuestra nuestros nuestras vuestro vuestra vuestros vuestras mio mia
        tuyo tuya suyo suya este esta estos estas ese esa esos esas aquel aquella esto eso
        que quien quienes cual cuales cuando donde adonde como cuanto cuanta cuantos
        cuantas por porque a ante con contra de desde en entre hacia hasta para segun sin
        sobre tras durante y e o u ni pero sino aunque ser soy eres es somos son era eran
        fue fueron sido estar estoy estas estamos estan estaba estado haber he has ha
        hemos han habia hay tener tengo tienes tiene tenemos tienen puedo puede pueden no
        ya muy mas aun todavia ahora actual actualmente tambien""".split()),
}
# Function words of those languages that are English words too ("What car do I drive?"):
# left in a question unless it reads as that language (languages()).
FALSE_FRIENDS = frozenset("""die hat war bin man mag um da ob ab mal car son ton pour
    plus sur par sans vers ma sa mes ses tes lui era sin con ante hay tras mia e u""".split())

QUERY_STOP_WORDS = (STOP_WORDS | frozenset(_ENGLISH_QUESTION.split())
                    | frozenset().union(*FUNCTION_WORDS.values()) - FALSE_FRIENDS)
# Kana particles and endings (hiragana), and Chinese particles, pronouns and question words.
_CJK_FUNCTION = frozenset(map(chr, range(0x3041, 0x30A0))) | frozenset(
    "的了吗呢吧啊呀么什哪谁怎我你您他她它们是这那在和与也都就还不没里儿嗎們這麼個")


def languages(words: Iterable[str]) -> frozenset[str]:
    """The languages a question reads as: those whose function words it holds more of
    than English ones (a question may read as two: French and Spanish share many)."""
    words = list(words)
    english = sum(w in STOP_WORDS for w in words)
    return frozenset(lang for lang, stops in FUNCTION_WORDS.items()
                     if sum(w in stops for w in words) > english)


def stop_words_for(words: Iterable[str]) -> frozenset[str]:
    """QUERY_STOP_WORDS, and the false friends of the languages the question reads as."""
    found = languages(words)
    if not found:
        return QUERY_STOP_WORDS
    return QUERY_STOP_WORDS.union(*(FUNCTION_WORDS[lang] & FALSE_FRIENDS for lang in found))


def function_bigram(gram: str) -> bool:
    """Whether a Chinese or Japanese bigram (or lone character) is all function."""
    return all(c in _CJK_FUNCTION for c in gram)
