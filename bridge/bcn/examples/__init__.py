"""Example BCN bots built on the SDK: `echo` (streaming) and `rules` (text protocol).

Run them with `bcn-bridge example-bot echo|rules --url ws://…/ws/bot --name …`.
"""
