sed -i 's/def greet(name)$/def greet(name):/' greet.py
