python3 -c '
from text import is_palindrome as p
assert p("Never odd or even") and p("abba") and p("") and not p("abc") and p("Aa")
'
